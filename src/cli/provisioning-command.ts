import { Injectable, type Type } from '@nestjs/common';
import { CommandRunner, Option } from 'nest-commander';
import { CliIo } from './cli-io.js';

/** `json` is printed with --json (one object), `text` otherwise. */
export interface CommandOutput {
  json: object;
  text: string;
}

/**
 * What every command shares. nest-commander builds the commands before it parses the command line,
 * so a command opens the database (and the queue, if it uses it) in `run`, once its flags are valid:
 * --help and bad flags connect to nothing. Its handler is a provider of that context.
 */
@Injectable()
export abstract class ProvisioningCommand<Handler, Options> extends CommandRunner {
  /** Imported only when the command runs, with the services, TypeORM and the queue behind it. */
  protected abstract readonly handler: () => Promise<Type<Handler>>;
  protected readonly usesQueue: boolean = false;
  protected readonly developmentOnly: boolean = false;

  constructor(private readonly io: CliIo) {
    super();
  }

  protected abstract execute(handler: Handler, options: Options): Promise<CommandOutput>;

  @Option({ flags: '--json', description: 'print exactly one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }

  async run(_operands: string[], options: Options & { json?: boolean }): Promise<void> {
    const [{ openProvisioning }, handler] = await Promise.all([import('./provisioning.js'), this.handler()]);
    const app = await openProvisioning(this.io, {
      command: this.command.name(),
      handler,
      usesQueue: this.usesQueue,
      developmentOnly: this.developmentOnly,
    });
    try {
      const output = await this.execute(app.get(handler), options);
      this.io.stdout(`${options.json ? JSON.stringify(output.json) : output.text}\n`);
    } finally {
      await app.close();
    }
  }
}
