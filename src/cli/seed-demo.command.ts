import { Command } from 'nest-commander';
import { ProvisioningCommand, type CommandOutput } from './provisioning-command.js';
import type { SeedDemoHandler } from './seed-demo.handler.js';

@Command({
  name: 'seed:demo',
  description: 'Create the demo workspace, three calculators and the documented development key (idempotent)',
})
export class SeedDemoCommand extends ProvisioningCommand<SeedDemoHandler, object> {
  protected readonly handler = () => import('./seed-demo.handler.js').then((m) => m.SeedDemoHandler);
  protected readonly developmentOnly = true;

  protected execute(demo: SeedDemoHandler): Promise<CommandOutput> {
    return demo.seed();
  }
}
