import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import type { PortalLinkEntity } from './portal-link.entity.js';

const ISO = 'ISO 8601 UTC, with milliseconds';

@ApiSchema({ name: 'PortalLink' })
export class PortalLinkResponse {
  @ApiProperty({ description: 'Portal link identifier (CUID2)' })
  id: string;

  @ApiProperty({ description: 'Whether its session may only read' })
  readOnly: boolean;

  @ApiProperty({ format: 'date-time', description: `When it was made; ${ISO}` })
  createdAt: string;

  @ApiProperty({ format: 'date-time', description: `When it, and its session, stop working; ${ISO}` })
  expiresAt: string;

  @ApiProperty({
    type: 'string',
    format: 'date-time',
    nullable: true,
    description: `When it was opened (exchanged for a session); null while unused; ${ISO}`,
  })
  usedAt: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, description: `When it was revoked; ${ISO}` })
  revokedAt: string | null;
}

@ApiSchema({ name: 'CreatedPortalLink' })
export class CreatedPortalLinkResponse extends PortalLinkResponse {
  @ApiProperty({
    type: 'string',
    nullable: true,
    description:
      'The single-use URL of the console signed in for the workspace, its token in the fragment (`#portal=`), ' +
      'on the scheme and host this request came to (`X-Forwarded-Proto` honoured). Shown only in this answer: ' +
      'the token is not stored, so an idempotent replay answers null (make a new link).',
  })
  url: string | null;
}

@ApiSchema({ name: 'PortalSession' })
export class PortalSessionResponse {
  @ApiProperty({ description: 'The session credential: send it in the `x-ac-portal-session` header' })
  token: string;

  @ApiProperty({ format: 'date-time', description: `When the session ends (the link's expiry); ${ISO}` })
  expiresAt: string;

  @ApiProperty({ description: 'Whether the session may only read' })
  readOnly: boolean;
}

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

export const serializePortalLink = (link: PortalLinkEntity): PortalLinkResponse => ({
  id: link.id,
  readOnly: link.readOnly,
  createdAt: link.createdAt.toISOString(),
  expiresAt: link.expiresAt.toISOString(),
  usedAt: iso(link.usedAt),
  revokedAt: iso(link.revokedAt),
});
