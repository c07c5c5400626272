/** VERSION is the package's version, read from package.json: one place to change it. */
import pkg from '../../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
