/** Where the CLI reads its configuration and writes its output: the process's own, or a test's. */
export class CliIo {
  readonly env: NodeJS.ProcessEnv = process.env;

  stdout(text: string): void {
    process.stdout.write(text);
  }

  stderr(text: string): void {
    process.stderr.write(text);
  }
}
