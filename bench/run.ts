/** npm run bench [-- --quick]: every benchmark, one after the other. */
await import('./core.ts');
await import('./delivery.ts');
await import('./sinks.ts');
await import('./approval.ts');
