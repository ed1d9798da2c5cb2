// `npm run test:browser`: the API reference page in Debian's chromium (CHROMIUM_PATH, default
// /usr/bin/chromium), driven by playwright-core, against a test app listening on a free port.
import base from '../../jest.config.mjs';

export default {
  ...base,
  rootDir: '../..',
  roots: ['<rootDir>/test/browser'],
  testRegex: '.*\\.browser-spec\\.ts$',
  testTimeout: 60_000,
};
