export const EXIT_USAGE = 64; // EX_USAGE: bad command line
export const EXIT_FAILURE = 1;

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
