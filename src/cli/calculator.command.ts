import { Command, Option } from 'nest-commander';
import type { CalculatorHandler, NewCalculatorOptions } from './calculator.handler.js';
import { parseName, parseNonEmpty, parseStatus, type CalculatorStatus } from './options.js';
import { ProvisioningCommand, type CommandOutput } from './provisioning-command.js';
import { WORKSPACE_OPTION } from './workspace.command.js';

@Command({
  name: 'calculator:create',
  description: 'Create a calculator; prints it as GET /api/v1/calculators shows it',
})
export class CalculatorCreateCommand extends ProvisioningCommand<CalculatorHandler, NewCalculatorOptions> {
  protected readonly handler = () => import('./calculator.handler.js').then((m) => m.CalculatorHandler);

  @Option(WORKSPACE_OPTION)
  parseWorkspace(raw: string): string {
    return parseNonEmpty(raw, '--workspace');
  }

  @Option({ flags: '--name <name>', description: 'calculator name, 1-255 characters', required: true })
  parseName(raw: string): string {
    return parseName(raw, '--name');
  }

  @Option({ flags: '--status <status>', description: 'draft (default) or published' })
  parseStatus(raw: string): CalculatorStatus {
    return parseStatus(raw, '--status');
  }

  protected execute(calculators: CalculatorHandler, options: NewCalculatorOptions): Promise<CommandOutput> {
    return calculators.create(options);
  }
}
