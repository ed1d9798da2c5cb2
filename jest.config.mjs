// ESM mode: NestJS 12 ships ES modules only, so tests run under --experimental-vm-modules.
export default {
  moduleFileExtensions: ['ts', 'js', 'json'],
  extensionsToTreatAsEsm: ['.ts'],
  testEnvironment: 'node',
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  testTimeout: 30000,
  // Each file imports the app anew in its own VM context and Node keeps much of it, so one process running
  // every file would reach V8's heap limit. A worker past this is replaced between files.
  workerIdleMemoryLimit: '1GB',
};
