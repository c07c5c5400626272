/**
 * The storage emulator's well-known development account (Azurite's, the same on every install,
 * public by design): what `UseDevelopmentStorage=true` means, and what the simulator's Azurite
 * serves.
 */
export const DEV_ACCOUNT = 'devstoreaccount1';
export const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
