import { parseArgs, type ParseArgsConfig } from 'node:util';
import { EXIT_USAGE, UsageError } from './cli-error.js';
import { COMMANDS, isCommandName, type CommandName, type CommandSpec } from './commands.js';

export type Invocation =
  | { kind: 'help'; text: string; exitCode: number }
  | { kind: 'run'; name: CommandName; command: CommandSpec; options: Record<string, string>; json: boolean };

const PROGRAM = 'npm run cli --';
type ArgOptions = NonNullable<ParseArgsConfig['options']>;

const COMMON_OPTIONS: ArgOptions = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

const usageOf = (name: string, command: CommandSpec): string =>
  [
    name,
    ...Object.entries(command.options).map(([flag, o]) =>
      'default' in o ? `[--${flag} ${o.value}]` : `--${flag} ${o.value}`,
    ),
    '[--json]',
  ].join(' ');

export function generalHelp(): string {
  const names = Object.keys(COMMANDS) as CommandName[];
  const width = Math.max(...names.map((n) => n.length));
  return [
    `Usage: ${PROGRAM} <command> [options]`,
    '',
    'Commands:',
    ...names.map((n) => `  ${n.padEnd(width)}  ${COMMANDS[n].summary}`),
    '',
    'Options of every command:',
    '  --json     print exactly one JSON object on stdout (errors still go to stderr)',
    '  --help     show the options of a command',
    '',
    'Configuration comes from the environment, as for the api (DATABASE_URL, NODE_ENV, MIGRATIONS_RUN, ...).',
    'Exit codes: 0 done, 1 failed, 64 bad arguments (nothing connects), 78 bad configuration.',
  ].join('\n');
}

function commandHelp(name: string, command: CommandSpec): string {
  const options = Object.entries(command.options).map(([flag, o]) => [`--${flag} ${o.value}`, o.description]);
  options.push(['--json', 'print exactly one JSON object on stdout']);
  const width = Math.max(...options.map(([left]) => left.length));
  return [
    `Usage: ${PROGRAM} ${usageOf(name, command)}`,
    '',
    command.summary,
    '',
    'Options:',
    ...options.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
  ].join('\n');
}

/** Reads the command line; every argument problem is a UsageError, raised before anything connects. */
export function parseCommandLine(argv: string[]): Invocation {
  const [name, ...rest] = argv;
  if (name === undefined) return { kind: 'help', text: generalHelp(), exitCode: EXIT_USAGE };
  if (name === '--help' || name === '-h' || name === 'help') return { kind: 'help', text: generalHelp(), exitCode: 0 };
  if (!isCommandName(name)) throw new UsageError(`unknown command "${name}"; run "${PROGRAM} --help" for the list`);
  const command: CommandSpec = COMMANDS[name];

  const hint = `run "${PROGRAM} ${name} --help" for its options`;
  const parsed = parseOrThrow(rest, command, hint);
  if (parsed.values.help) return { kind: 'help', text: commandHelp(name, command), exitCode: 0 };

  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option') continue;
    if (seen.has(token.name)) throw new UsageError(`option --${token.name} is given more than once; ${hint}`);
    seen.add(token.name);
  }

  const options: Record<string, string> = {};
  for (const [flag, spec] of Object.entries(command.options)) {
    const raw = parsed.values[flag];
    if (typeof raw === 'string') options[flag] = spec.parse ? spec.parse(raw, `--${flag}`) : raw;
    else if ('default' in spec) options[flag] = spec.default;
    else throw new UsageError(`missing required option --${flag} ${spec.value}; ${hint}`);
  }
  return { kind: 'run', name, command, options, json: parsed.values.json === true };
}

function parseOrThrow(args: string[], command: CommandSpec, hint: string) {
  const options: ArgOptions = { ...COMMON_OPTIONS };
  for (const flag of Object.keys(command.options)) options[flag] = { type: 'string' };
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false, tokens: true });
  } catch (error) {
    const code = (error as { code?: string }).code ?? '';
    if (!code.startsWith('ERR_PARSE_ARGS')) throw error;
    const message = (error as Error).message;
    // Node says "argument missing" or, when the next word starts with '-', "argument is ambiguous".
    const missing = /^Option '(--[\w-]+)[^']*' argument (missing|is ambiguous)/.exec(message);
    const reason = missing ? `option ${missing[1]} needs a value` : message.split('\n')[0].replace(/\.$/, '');
    throw new UsageError(`${reason}; ${hint}`);
  }
}
