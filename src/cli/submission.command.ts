import { Command, Option } from 'nest-commander';
import { parseBoolean, parseJsonObject, parseNonEmpty, type JsonObject } from './options.js';
import { ProvisioningCommand, type CommandOutput } from './provisioning-command.js';
import type { NewSubmissionOptions, SubmissionHandler } from './submission.handler.js';

@Command({
  name: 'submission:create',
  description: 'Submit answers to a calculator, as a visitor would; its webhooks receive the submission',
})
export class SubmissionCreateCommand extends ProvisioningCommand<SubmissionHandler, NewSubmissionOptions> {
  protected readonly handler = () => import('./submission.handler.js').then((m) => m.SubmissionHandler);
  protected readonly usesQueue = true;

  @Option({ flags: '--calculator <id>', description: 'id of the calculator', required: true })
  parseCalculator(raw: string): string {
    return parseNonEmpty(raw, '--calculator');
  }

  @Option({ flags: '--data <json>', description: 'the answers, a JSON object', required: true })
  parseData(raw: string): JsonObject {
    return parseJsonObject(raw, '--data');
  }

  @Option({ flags: '--finished <true|false>', description: 'true (default) or false' })
  parseFinished(raw: string): boolean {
    return parseBoolean(raw, '--finished');
  }

  @Option({ flags: '--meta <json>', description: 'a JSON object, default {}' })
  parseMeta(raw: string): JsonObject {
    return parseJsonObject(raw, '--meta');
  }

  protected execute(submissions: SubmissionHandler, options: NewSubmissionOptions): Promise<CommandOutput> {
    return submissions.create(options);
  }
}
