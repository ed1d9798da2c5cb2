import { Controller, Get, Query } from '@nestjs/common';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { parsePaging } from '../core/http/paging.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { serializeCalculator, type CalculatorResponse } from './calculator.serializer.js';
import { CalculatorsService } from './calculators.service.js';

@Controller('calculators')
export class CalculatorsController {
  constructor(private readonly calculators: CalculatorsService) {}

  @Get()
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() query: Record<string, unknown>,
  ): Promise<{ data: CalculatorResponse[] }> {
    const { limit, offset } = parsePaging(query);
    const rows = await this.calculators.list(workspace.id, limit, offset);
    return { data: rows.map(serializeCalculator) };
  }
}
