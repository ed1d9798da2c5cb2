import {
  parseBoolean,
  parseJsonObject,
  parseKeyPrefix,
  parseName,
  parseNonEmpty,
  parseStatus,
  type OptionSpec,
} from './options.js';

/** What a command takes; its handler (handlers.ts) loads only once the arguments are valid. */
export interface CommandSpec {
  summary: string;
  options: Record<string, OptionSpec>;
  /** Refused before connecting when NODE_ENV=production. */
  developmentOnly?: boolean;
}

const workspace: OptionSpec = {
  value: '<id>',
  description: 'id of the workspace',
  required: true,
  parse: parseNonEmpty,
};
const name = (what: string): OptionSpec => ({
  value: '<name>',
  description: `${what} name, 1-255 characters`,
  required: true,
  parse: parseName,
});

export const COMMANDS = {
  'workspace:create': {
    summary: 'Create a workspace and its first API key (the key is printed once)',
    options: { name: name('workspace') },
  },
  'apikey:create': {
    summary: 'Issue another API key for a workspace (the key is printed once)',
    options: { workspace },
  },
  'apikey:list': {
    summary: "List a workspace's API keys: prefix, created, last used, revoked (never the key)",
    options: { workspace },
  },
  'apikey:revoke': {
    summary: 'Revoke an API key by its prefix; its next request gets 401',
    options: {
      workspace,
      prefix: {
        value: '<prefix>',
        description: 'key prefix as apikey:list shows it',
        required: true,
        parse: parseKeyPrefix,
      },
    },
  },
  'calculator:create': {
    summary: 'Create a calculator; prints it as GET /api/v1/calculators shows it',
    options: {
      workspace,
      name: name('calculator'),
      status: { value: '<status>', description: 'draft (default) or published', default: 'draft', parse: parseStatus },
    },
  },
  'submission:create': {
    summary: 'Submit answers to a calculator, as a visitor would; its webhooks receive the submission',
    options: {
      calculator: { value: '<id>', description: 'id of the calculator', required: true, parse: parseNonEmpty },
      data: { value: '<json>', description: 'the answers, a JSON object', required: true, parse: parseJsonObject },
      finished: { value: '<true|false>', description: 'true (default) or false', default: 'true', parse: parseBoolean },
      meta: { value: '<json>', description: 'a JSON object, default {}', default: '{}', parse: parseJsonObject },
    },
  },
  'seed:demo': {
    summary: 'Create the demo workspace, three calculators and the documented development key (idempotent)',
    options: {},
    developmentOnly: true,
  },
} satisfies Record<string, CommandSpec>;

export type CommandName = keyof typeof COMMANDS;

export const isCommandName = (value: string): value is CommandName => Object.hasOwn(COMMANDS, value);
