import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';

export interface AuthenticatedRequest {
  workspace: WorkspaceEntity;
  /** The id of the API key that authenticated the request (never the key). */
  apiKeyId: string;
}

/** The workspace of the API key that authenticated the request. */
export const CurrentWorkspace = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): WorkspaceEntity =>
    ctx.switchToHttp().getRequest<AuthenticatedRequest>().workspace,
);
