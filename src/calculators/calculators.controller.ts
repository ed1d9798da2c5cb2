import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { parsePaging } from '../core/http/paging.js';
import { ApiDataResponse, ApiErrorResponses, ApiPagingQuery } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { CalculatorResponse, serializeCalculator } from './calculator.serializer.js';
import { CalculatorsService } from './calculators.service.js';

@ApiTags('calculators')
@Controller('calculators')
export class CalculatorsController {
  constructor(private readonly calculators: CalculatorsService) {}

  @Get()
  @ApiOperation({ operationId: 'listCalculators', summary: 'List calculators' })
  @ApiPagingQuery()
  @ApiDataResponse(CalculatorResponse, { isArray: true, description: 'Calculators, oldest first' })
  @ApiErrorResponses(400)
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() query: Record<string, unknown>,
  ): Promise<{ data: CalculatorResponse[] }> {
    const { limit, offset } = parsePaging(query);
    const rows = await this.calculators.list(workspace.id, limit, offset);
    return { data: rows.map(serializeCalculator) };
  }
}
