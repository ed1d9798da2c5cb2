import { Command, Option } from 'nest-commander';
import { parseNonEmpty } from './options.js';
import { ProvisioningCommand, type CommandOutput } from './provisioning-command.js';
import type { WebhookHandler } from './webhook.handler.js';
import { WORKSPACE_OPTION } from './workspace.command.js';

@Command({
  name: 'webhook:list',
  description: "List a workspace's webhooks: id, name, url, calculators, state (never the secret)",
})
export class WebhookListCommand extends ProvisioningCommand<WebhookHandler, { workspace: string }> {
  protected readonly handler = () => import('./webhook.handler.js').then((m) => m.WebhookHandler);

  @Option(WORKSPACE_OPTION)
  parseWorkspace(raw: string): string {
    return parseNonEmpty(raw, '--workspace');
  }

  protected execute(webhooks: WebhookHandler, { workspace }: { workspace: string }): Promise<CommandOutput> {
    return webhooks.list(workspace);
  }
}
