import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { reportFailure } from './cli/cli-error.js';
import { CliModule } from './cli/cli.module.js';

/** `npm run cli -- <command>`: provisioning. Stdout carries only the result; everything else goes to stderr. */
// No process.exit(): every context closes its connections, so the process ends once stdout is flushed.
await CommandFactory.run(CliModule, {
  logger: false,
  abortOnError: false,
  serviceErrorHandler: (error) => {
    process.exitCode = reportFailure(error, (text) => process.stderr.write(text));
  },
});
