import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { CommandRunner, InjectCommander } from 'nest-commander';
import { EXIT_USAGE, HelpShown, UsageError, type CliError } from './cli-error.js';
import { CliIo } from './cli-io.js';

/** commander's Command, at the version nest-commander brings (the root commander is another one). */
type Program = Parameters<CommandRunner['setCommand']>[0];
type ProgramOption = Program['options'][number];
interface CommanderError {
  code: string;
  exitCode: number;
  message: string;
}

const PROGRAM = 'npm run cli --';

const NOTES = `
Every command also takes --json: print exactly one JSON object on stdout (errors still go to stderr).
Configuration comes from the environment, as for the api (DATABASE_URL, NODE_ENV, MIGRATIONS_RUN, ...).
Exit codes: 0 done, 1 failed, 64 bad arguments (nothing connects), 78 bad configuration.`;

/**
 * Settles what commander leaves to the application, on every command nest-commander built: names and
 * usage lines, output through CliIo, our wording and exit code 64 for a bad command line, and the
 * checks commander does not make (an option given twice, a value that is the next flag, a stray word).
 */
@Injectable()
export class CliProgram implements OnApplicationBootstrap {
  constructor(
    @InjectCommander() private readonly program: Program,
    private readonly io: CliIo,
  ) {}

  onApplicationBootstrap(): void {
    this.program
      .name(PROGRAM)
      .usage('<command> [options]')
      .description('Provisioning: workspaces, API keys, calculators and test submissions.')
      .helpOption('-h, --help', 'show the commands; <command> --help shows its options')
      .addHelpCommand('help [command]', "show a command's options")
      .configureHelp({ subcommandTerm: termOf })
      .addHelpText('after', NOTES);
    this.configure(this.program, `run "${PROGRAM} --help" for the list`);
    for (const command of this.program.commands) {
      command.usage(usageOf(command)).helpOption('-h, --help', 'show these options').allowExcessArguments(false);
      const hint = `run "${PROGRAM} ${command.name()} --help" for its options`;
      this.configure(command, hint);
      for (const option of command.options) refuseRepeatsAndMissingValues(option, hint);
    }
  }

  private configure(command: Program, hint: string): void {
    command
      .configureOutput({
        writeOut: (text) => this.io.stdout(text),
        writeErr: (text) => this.io.stderr(text),
        outputError: () => undefined, // the error handler reports the failure, in our words
      })
      .exitOverride((error) => {
        throw usageFailure(command, error, hint);
      });
  }
}

const termOf = (command: Program): string =>
  [command.name(), ...command.registeredArguments.map((a) => (a.required ? `<${a.name()}>` : `[${a.name()}]`))].join(
    ' ',
  );

/** `calculator:create --workspace <id> --name <name> [--status <status>] [--json]` */
const usageOf = (command: Program): string =>
  command.options.map((o) => (o.mandatory ? o.flags : `[${o.flags}]`)).join(' ');

/** The quoted word of a commander message, e.g. `--colour` in "error: unknown option '--colour'". */
const quotedIn = (message: string): string => /'([^']*)'/.exec(message)?.[1] ?? '';

function usageFailure(command: Program, error: CommanderError, hint: string): CliError {
  switch (error.code) {
    case 'commander.helpDisplayed':
    case 'commander.help':
      return new HelpShown(error.exitCode === 0 ? 0 : EXIT_USAGE);
    case 'commander.unknownCommand':
      return new UsageError(`unknown command "${quotedIn(error.message)}"; ${hint}`);
    case 'commander.unknownOption':
      return new UsageError(`Unknown option '${quotedIn(error.message)}'; ${hint}`);
    case 'commander.optionMissingArgument':
      return new UsageError(`option ${quotedIn(error.message).split(' ')[0]} needs a value; ${hint}`);
    case 'commander.missingMandatoryOptionValue':
      return new UsageError(`missing required option ${quotedIn(error.message)}; ${hint}`);
    case 'commander.excessArguments':
      return new UsageError(
        `Unexpected argument '${command.args[0]}'. This command does not take positional arguments; ${hint}`,
      );
    default:
      return new UsageError(`${error.message.replace(/^error: /, '')}; ${hint}`);
  }
}

/**
 * commander keeps the last of a repeated option, and takes the word after `--name` as its value even
 * when that word is the next flag: both are mistakes in the command line, refused here.
 */
function refuseRepeatsAndMissingValues(option: ProgramOption, hint: string): void {
  const parse = option.parseArg;
  option.argParser((raw: string, previous: unknown) => {
    if (previous !== undefined) throw new UsageError(`option ${option.long} is given more than once; ${hint}`);
    if (option.required && raw.startsWith('-')) throw new UsageError(`option ${option.long} needs a value; ${hint}`);
    return parse ? parse(raw, previous) : raw;
  });
}
