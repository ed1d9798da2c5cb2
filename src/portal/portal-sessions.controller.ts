import { Body, Controller, Header, HttpCode, Post } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { Public } from '../auth/public.decorator.js';
import { ApiError } from '../core/http/api-error.js';
import { ApiDataResponse, ApiErrorResponses } from '../openapi/api-decorators.js';
import { ExchangePortalLinkDto } from './exchange-portal-link.dto.js';
import { PortalSessionResponse } from './portal-link.serializer.js';
import { PortalLinks } from './portal-links.js';
import { looksLikeLinkToken } from './portal-token.js';

/** What the console does with a portal link's token: one exchange for a session credential (DESIGN 10). */
@ApiTags('portal')
@Controller('portal-sessions')
export class PortalSessionsController {
  constructor(private readonly links: PortalLinks) {}

  @Post()
  @HttpCode(200)
  @Public({ perIpLimit: true }) // the token is the credential
  @Header('Cache-Control', 'no-store') // the answer carries the session credential
  @ApiOperation({
    operationId: 'openPortalSession',
    summary: "Exchange a portal link's token for a session (the console does this)",
    description:
      'Needs no API key: the token is the credential, in the body so it is never in a URL or a log. A link ' +
      'opens one session only: a second exchange, even racing the first, answers 401, as do an expired or ' +
      'revoked link. Send the session credential in the `x-ac-portal-session` header; it ends with the link. ' +
      'Takes no Idempotency-Key (the exchange is single-use by itself).',
  })
  @ApiDataResponse(PortalSessionResponse, { description: 'The session' })
  @ApiErrorResponses(400, 413)
  async open(@Body() { token }: ExchangePortalLinkDto): Promise<{ data: PortalSessionResponse }> {
    const opened = looksLikeLinkToken(token) ? await this.links.exchange(token) : null;
    if (!opened)
      throw ApiError.notAuthenticated('This portal link is unknown, used, expired or revoked: ask for a new one');
    const { session, link } = opened;
    return { data: { token: session, expiresAt: link.expiresAt.toISOString(), readOnly: link.readOnly } };
  }
}
