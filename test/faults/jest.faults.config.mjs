// `npm run test:faults`: real api and worker processes, real Postgres and Redis (private ones where a
// scenario restarts them), local receivers. Serial (--runInBand): the scenarios share two cores.
export default {
  rootDir: '../..',
  moduleFileExtensions: ['ts', 'js', 'json'],
  extensionsToTreatAsEsm: ['.ts'],
  testEnvironment: 'node',
  roots: ['<rootDir>/test/faults'],
  testRegex: '.*\\.faults-spec\\.ts$',
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  globalSetup: '<rootDir>/test/faults/global-setup.mjs',
  globalTeardown: '<rootDir>/test/faults/global-teardown.mjs',
  reporters: ['default', '<rootDir>/test/faults/reliability-reporter.mjs'],
  testTimeout: 300_000,
};
