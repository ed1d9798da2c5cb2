import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { decodeCursor } from '../core/http/log-cursor.js';
import { ApiCursorPage, ApiErrorResponses } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { AuditEventResponse, serializeAuditEvent } from './audit-event.serializer.js';
import { AuditEvents } from './audit-events.js';
import { ListAuditEventsQuery } from './list-audit-events.query.js';

/** The workspace's audit log (DESIGN 10). */
@ApiTags('audit')
@Controller('audit-events')
export class AuditEventsController {
  constructor(private readonly events: AuditEvents) {}

  @Get()
  @ApiOperation({
    operationId: 'listAuditEvents',
    summary: "List the workspace's changes, newest first",
    description:
      'Every change made through the API (webhook created, removed, disabled, enabled, secret rotated; a ' +
      'delivery retried; a recovery started; a portal link created or revoked): when, by which API key (its ' +
      "id) or portal session (its link's id), in which request, and what " +
      'changed, never a secret. Kept `AUDIT_RETENTION`. Ordered by `occurredAt`, then `id`, both descending; ' +
      'pass `nextCursor` as `cursor` for the next page. Unknown query parameters are ignored.',
  })
  @ApiCursorPage(AuditEventResponse, 'A page of events; `nextCursor` is null on the last page')
  @ApiErrorResponses(400)
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() { cursor, ...filters }: ListAuditEventsQuery,
  ): Promise<{ data: AuditEventResponse[]; nextCursor: string | null }> {
    const after = decodeCursor(workspace.id, cursor);
    const { events, nextCursor } = await this.events.list(workspace.id, { ...filters, after });
    return { data: events.map(serializeAuditEvent), nextCursor };
  }
}
