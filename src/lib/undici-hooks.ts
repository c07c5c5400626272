/**
 * undici-hooks: imported before undici (http-client.ts), it points undici's HTTP/2 client at
 * http2-lazy.ts instead of node:http2, through Node's module hooks, so that a bridge speaking
 * plain HTTP/1.1 never loads node:http2 or node:tls. The single executable's bundle does the same
 * when it is built (scripts/build-binary.ts).
 */
import { registerHooks } from 'node:module';

const lazy = new URL(`./http2-lazy${import.meta.url.slice(import.meta.url.lastIndexOf('.'))}`, import.meta.url).href;
const CLIENT_H2 = /[/\\]undici[/\\]lib[/\\]dispatcher[/\\]client-h2\.js$/;

registerHooks({
  resolve(specifier, context, next) {
    if ((specifier === 'node:http2' || specifier === 'http2') && CLIENT_H2.test(context.parentURL ?? ''))
      return { url: lazy, shortCircuit: true };
    return next(specifier, context);
  },
});
