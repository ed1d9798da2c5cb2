import { Controller, Get, Query } from '@nestjs/common';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { serializeCalculator, type CalculatorResponse } from './calculator.serializer.js';
import { CalculatorsService } from './calculators.service.js';
import { parseCalculatorPaging } from './list-calculators.query.js';

@Controller('calculators')
export class CalculatorsController {
  constructor(private readonly calculators: CalculatorsService) {}

  @Get()
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() query: Record<string, unknown>,
  ): Promise<{ data: CalculatorResponse[] }> {
    const { limit, offset } = parseCalculatorPaging(query);
    const rows = await this.calculators.list(workspace.id, limit, offset);
    return { data: rows.map(serializeCalculator) };
  }
}
