import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import type { WorkspaceEntity } from './workspace.entity.js';
import { ApiErrorResponses } from '../openapi/api-decorators.js';
import { serializeWorkspace, WorkspaceResponse } from './workspace.serializer.js';

@ApiTags('workspace')
@Controller('me')
export class WorkspacesController {
  /** The spec's one unwrapped response: the workspace object itself, no `data`. */
  @Get()
  @ApiOperation({ operationId: 'getCurrentWorkspace', summary: 'Get the workspace of the API key' })
  @ApiOkResponse({ type: WorkspaceResponse, description: 'The workspace, not wrapped in `data`' })
  @ApiErrorResponses(400)
  me(@CurrentWorkspace() workspace: WorkspaceEntity): WorkspaceResponse {
    return serializeWorkspace(workspace);
  }
}
