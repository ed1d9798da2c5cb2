import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { ApiDataResponse, ApiErrorResponses } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { CalculatorResponse, serializeCalculator } from './calculator.serializer.js';
import { CalculatorsService } from './calculators.service.js';
import { ListCalculatorsQuery } from './list-calculators.query.js';

@ApiTags('calculators')
@Controller('calculators')
export class CalculatorsController {
  constructor(private readonly calculators: CalculatorsService) {}

  @Get()
  @ApiOperation({ operationId: 'listCalculators', summary: 'List calculators' })
  @ApiDataResponse(CalculatorResponse, { isArray: true, description: 'Calculators, oldest first' })
  @ApiErrorResponses(400)
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() { limit, offset }: ListCalculatorsQuery,
  ): Promise<{ data: CalculatorResponse[] }> {
    const rows = await this.calculators.list(workspace.id, limit, offset);
    return { data: rows.map(serializeCalculator) };
  }
}
