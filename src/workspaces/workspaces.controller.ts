import { Controller, Get } from '@nestjs/common';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import type { WorkspaceEntity } from './workspace.entity.js';
import { serializeWorkspace, type WorkspaceResponse } from './workspace.serializer.js';

@Controller('me')
export class WorkspacesController {
  /** The spec's one unwrapped response: the workspace object itself, no `data`. */
  @Get()
  me(@CurrentWorkspace() workspace: WorkspaceEntity): WorkspaceResponse {
    return serializeWorkspace(workspace);
  }
}
