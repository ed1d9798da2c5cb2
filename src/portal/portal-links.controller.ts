import { Body, Controller, Delete, Get, Header, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { Audited, unchanged } from '../audit/audited.js';
import { CurrentWorkspace } from '../auth/current-workspace.decorator.js';
import { ApiKeyOnly } from '../auth/public.decorator.js';
import { CONSOLE_PATH } from '../console/console-page.js';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { ApiError } from '../core/http/api-error.js';
import { decodeCursor } from '../core/http/log-cursor.js';
import { KeepForReplay } from '../idempotency/idempotency.interceptor.js';
import { ApiCursorPage, ApiDataResponse, ApiErrorResponses } from '../openapi/api-decorators.js';
import type { WorkspaceEntity } from '../workspaces/workspace.entity.js';
import { CreatePortalLinkDto } from './create-portal-link.dto.js';
import { ListPortalLinksQuery } from './list-portal-links.query.js';
import { CreatedPortalLinkResponse, PortalLinkResponse, serializePortalLink } from './portal-link.serializer.js';
import { PortalLinks } from './portal-links.js';
import { PORTAL_FRAGMENT } from './portal-token.js';

/** The console URL the link opens, on the scheme and host the request came to (its caller's own view). */
function consoleUrl(req: Request, token: string): string {
  const forwarded = String(req.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]
    .trim();
  const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : req.protocol;
  return `${scheme}://${req.get('host')}${CONSOLE_PATH}/#${PORTAL_FRAGMENT}${token}`;
}

/** Portal links (DESIGN 10): made, listed and revoked with an API key only, never from a portal session. */
@ApiTags('portal')
@Controller('portal-links')
@ApiKeyOnly()
export class PortalLinksController {
  constructor(
    private readonly links: PortalLinks,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Post()
  @HttpCode(200)
  @Header('Cache-Control', 'no-store') // the answer carries the token
  @ApiOperation({
    operationId: 'createPortalLink',
    summary: 'Make a single-use link to the console, signed in for the workspace',
    description:
      'For a product to hand its own users, or to embed in an iframe (the embedding origin must be in ' +
      '`PORTAL_FRAME_ANCESTORS`). Opening the URL signs the console in for the workspace once: the console ' +
      'takes the token out of the address bar and exchanges it (`POST /portal-sessions`) for a session that ' +
      'ends with the link, at the latest `PORTAL_LINK_TTL` after it was made, or when it is revoked.',
  })
  @ApiDataResponse(CreatedPortalLinkResponse, { description: 'The link, with its URL shown only now' })
  @ApiErrorResponses(400, 403, 413)
  @KeepForReplay<{ data: CreatedPortalLinkResponse }>(({ data }) => ({ data: { ...data, url: null } }))
  @Audited<CreatedPortalLinkResponse>('portal_link.created', (_req, { data }) => ({
    targetType: 'portal_link',
    targetId: data.id,
    changes: { readOnly: data.readOnly, expiresAt: data.expiresAt },
  }))
  async create(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Body() dto: CreatePortalLinkDto,
    @Req() req: Request,
  ): Promise<{ data: CreatedPortalLinkResponse }> {
    const ttlSeconds = Math.floor(this.config.portalLinkTtlMs / 1000);
    if (dto.expiresIn !== undefined && dto.expiresIn > ttlSeconds) {
      throw ApiError.invalidField('expiresIn', `must not be greater than ${ttlSeconds} (PORTAL_LINK_TTL)`);
    }
    const expiresInMs = dto.expiresIn === undefined ? undefined : dto.expiresIn * 1000;
    const { link, token } = await this.links.issue(workspace.id, { expiresInMs, readOnly: dto.readOnly });
    return { data: { ...serializePortalLink(link), url: consoleUrl(req, token) } };
  }

  @Get()
  @ApiOperation({
    operationId: 'listPortalLinks',
    summary: "List the workspace's portal links, newest first, without their tokens",
    description:
      'Used, expired and revoked links included; a link is deleted once expired for longer than ' +
      '`AUDIT_RETENTION` (365 days). Ordered by `createdAt`, then `id`, both descending; pass ' +
      '`nextCursor` as `cursor` for the next page. Unknown query parameters are ignored.',
  })
  @ApiCursorPage(PortalLinkResponse, 'A page of links; `nextCursor` is null on the last page')
  @ApiErrorResponses(400, 403)
  async list(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Query() { cursor, limit }: ListPortalLinksQuery,
  ): Promise<{ data: PortalLinkResponse[]; nextCursor: string | null }> {
    const after = decodeCursor(workspace.id, cursor);
    const { links, nextCursor } = await this.links.list(workspace.id, { after, limit });
    return { data: links.map(serializePortalLink), nextCursor };
  }

  @Delete(':portalLinkId')
  @ApiOperation({
    operationId: 'revokePortalLink',
    summary: 'Revoke a portal link, and end the session it opened',
    description:
      'The link can no longer be opened and its session is refused (401) from the next request on. ' +
      'Revoking a revoked link changes nothing.',
  })
  @ApiDataResponse(PortalLinkResponse, { description: 'The link, revoked' })
  @ApiErrorResponses(400, 403, 404)
  @Audited<PortalLinkResponse>('portal_link.revoked', (_req, { data }) => ({
    targetType: 'portal_link',
    targetId: data.id,
  }))
  async revoke(
    @CurrentWorkspace() workspace: WorkspaceEntity,
    @Param('portalLinkId') id: string,
    @Req() req: Request,
  ): Promise<{ data: PortalLinkResponse }> {
    const { link, changed } = await this.links.revoke(workspace.id, id);
    if (!changed) unchanged(req);
    return { data: serializePortalLink(link) };
  }
}
