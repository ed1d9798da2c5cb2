import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';

/** Who makes a request: an API key or a portal session, by the id of the key or of the link that opened it. */
export interface Actor {
  type: 'api_key' | 'portal_link';
  id: string;
}

export interface AuthenticatedRequest {
  workspace: WorkspaceEntity;
  /** Never the key or the session credential. */
  actor: Actor;
}

/** The workspace of the API key or portal session that authenticated the request. */
export const CurrentWorkspace = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): WorkspaceEntity =>
    ctx.switchToHttp().getRequest<AuthenticatedRequest>().workspace,
);
