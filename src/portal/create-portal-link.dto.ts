import { ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsBoolean, IsInt, Min, ValidateIf } from 'class-validator';

@ApiSchema({ name: 'CreatePortalLink' })
export class CreatePortalLinkDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    description:
      'Seconds the link, and the session it opens, last; default and maximum `PORTAL_LINK_TTL` (1 hour unless ' +
      'configured). A longer one is refused with 400.',
  })
  // Present means not null: sent as null is an error, not the default. The maximum is the configured TTL,
  // checked by the controller.
  @ValidateIf((o: CreatePortalLinkDto) => o.expiresIn !== undefined)
  @IsInt()
  @Min(1)
  expiresIn?: number;

  @ApiPropertyOptional({
    type: 'boolean',
    default: false,
    description: 'The session may read everything but change nothing: every write answers 403',
  })
  @ValidateIf((o: CreatePortalLinkDto) => o.readOnly !== undefined)
  @IsBoolean()
  readOnly?: boolean;
}
