import { Injectable } from '@nestjs/common';
import { serializeCalculator } from '../calculators/calculator.serializer.js';
import { CalculatorsService } from '../calculators/calculators.service.js';
import { WorkspacesService } from '../workspaces/workspaces.service.js';
import type { CalculatorStatus } from './options.js';
import type { CommandOutput } from './provisioning-command.js';
import { findWorkspace } from './workspace.handler.js';

export interface NewCalculatorOptions {
  workspace: string;
  name: string;
  status?: CalculatorStatus;
}

@Injectable()
export class CalculatorHandler {
  constructor(
    private readonly workspaces: WorkspacesService,
    private readonly calculators: CalculatorsService,
  ) {}

  /** Prints the calculator as GET /api/v1/calculators shows it. */
  async create({ workspace: workspaceId, name, status = 'draft' }: NewCalculatorOptions): Promise<CommandOutput> {
    const workspace = await findWorkspace(this.workspaces, workspaceId);
    const created = await this.calculators.create({ workspaceId: workspace.id, name, status });
    const calculator = serializeCalculator({ ...created, submissionsCount: 0, lastSubmissionAt: null });
    return { json: calculator, text: JSON.stringify(calculator, null, 2) };
  }
}
