import { CliError, EXIT_FAILURE } from './cli/cli-error.js';
import { parseCommandLine } from './cli/command-line.js';

/** `npm run cli -- <command>`: provisioning. Stdout carries only the result; everything else goes to stderr. */
async function main(argv: string[]): Promise<number> {
  const invocation = parseCommandLine(argv);
  if (invocation.kind === 'help') {
    (invocation.exitCode === 0 ? process.stdout : process.stderr).write(`${invocation.text}\n`);
    return invocation.exitCode;
  }
  const { name, command, options, json } = invocation;
  // Nest, TypeORM and the services load only now, so --help and bad arguments answer at once.
  await import('reflect-metadata');
  const [{ loadConfigOrExit }, { runMigrations }, { NestFactory }, { CliModule }, { HANDLERS }] = await Promise.all([
    import('./core/config/load-or-exit.js'),
    import('./core/database/migrate.js'),
    import('@nestjs/core'),
    import('./cli/cli.module.js'),
    import('./cli/handlers.js'),
  ]);
  const config = loadConfigOrExit();
  if (command.developmentOnly && config.env === 'production') {
    throw new CliError(`${name} is for development only; refusing with NODE_ENV=production`);
  }
  if (config.migrationsRun) {
    const applied = await runMigrations(config);
    if (applied.length > 0) process.stderr.write(`Applied migrations: ${applied.join(', ')}\n`);
  }
  const app = await NestFactory.createApplicationContext(CliModule.forRoot(config, HANDLERS[name].imports), {
    logger: false,
    abortOnError: false,
  });
  try {
    const output = await HANDLERS[name].run({ app, config }, options);
    process.stdout.write(`${json ? JSON.stringify(output.json) : output.text}\n`);
    return 0;
  } finally {
    await app.close();
  }
}

// No process.exit(): closing the context ends the pool, so the process ends by itself once stdout is flushed.
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: Error) => {
    process.stderr.write(`Error: ${error.message}\n`);
    process.exitCode = error instanceof CliError ? error.exitCode : EXIT_FAILURE;
  },
);
