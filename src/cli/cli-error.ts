export const EXIT_USAGE = 64; // EX_USAGE: bad command line
export const EXIT_FAILURE = 1;
export const EXIT_CONFIG = 78; // EX_CONFIG, as the api exits on bad configuration

/** A failure the CLI reports as one line on stderr, with its exit code, and no stack. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = EXIT_FAILURE,
  ) {
    super(message);
  }
}

export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT_USAGE);
  }
}

/** Commander has printed the help (asked for, or because no command was given): nothing more to say. */
export class HelpShown extends CliError {
  constructor(exitCode: number) {
    super('', exitCode);
  }
}

/** Writes a failed command's message (HelpShown has none) and returns its exit code; anything unexpected exits 1. */
export function reportFailure(error: unknown, write: (text: string) => void): number {
  const message = error instanceof Error ? error.message : String(error);
  if (message) write(`Error: ${message}\n`);
  return error instanceof CliError ? error.exitCode : EXIT_FAILURE;
}
