import {
  applyDecorators,
  Injectable,
  Logger,
  SetMetadata,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { from, mergeMap, type Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/current-workspace.decorator.js';
import type { AuditAction } from './audit-event.entity.js';
import { AuditEvents } from './audit-events.js';

/** What an audited route changed, read from its request and its answer; no secret may be in `changes`. */
export interface AuditedChange {
  targetType: string;
  targetId: string;
  changes?: Record<string, unknown>;
}

type Describe = (request: Request, answer: { data: never }) => AuditedChange | null;

interface AuditSpec {
  action: AuditAction;
  describe: Describe;
}

const AUDIT = Symbol('audit');
const UNCHANGED = Symbol('unchanged');

/** Marks an audited request that changed nothing (disabling a disabled webhook, say): no event. */
export function unchanged(request: Request): void {
  (request as Request & { [UNCHANGED]?: true })[UNCHANGED] = true;
}

/**
 * The route's successful changes are audit events (DESIGN 10): the action, the actor (an API key's id, or
 * the portal link's of a portal session), the request
 * id and what `describe` reads from the request and the answer (null: nothing changed, no event).
 */
export const Audited = <A>(
  action: AuditAction,
  describe: (request: Request, answer: { data: A }) => AuditedChange | null,
) => applyDecorators(SetMetadata(AUDIT, { action, describe } as AuditSpec), UseInterceptors(AuditInterceptor));

/**
 * Records the event after the change succeeded and before the answer goes out, so the change is in the
 * log by the time its caller reads it. An idempotent replay never reaches the route, so it adds none.
 */
@Injectable()
export class AuditInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Audit');

  constructor(
    private readonly reflector: Reflector,
    private readonly events: AuditEvents,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<AuditSpec | undefined>(AUDIT, context.getHandler());
    if (!spec) return next.handle();
    const request = context.switchToHttp().getRequest<Request & AuthenticatedRequest & { id?: unknown }>();
    return next
      .handle()
      .pipe(mergeMap((answer: { data: never }) => from(this.record(spec, request, answer).then(() => answer))));
  }

  private async record(
    { action, describe }: AuditSpec,
    request: Request & AuthenticatedRequest & { id?: unknown },
    answer: { data: never },
  ): Promise<void> {
    if ((request as Request & { [UNCHANGED]?: true })[UNCHANGED]) return;
    const change = describe(request, answer);
    if (!change) return;
    try {
      await this.events.record({
        workspaceId: request.workspace.id,
        action,
        actorType: request.actor.type,
        actorId: request.actor.id,
        requestId: typeof request.id === 'string' ? request.id : null,
        targetType: change.targetType,
        targetId: change.targetId,
        changes: change.changes ?? {},
      });
    } catch (error) {
      // The change is made and answered for; failing its answer now would have the caller repeat it.
      this.logger.error({
        msg: 'Audit event not recorded',
        action,
        targetId: change.targetId,
        error: (error as Error).message,
      });
    }
  }
}
