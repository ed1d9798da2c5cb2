import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { IsString, MaxLength } from 'class-validator';

@ApiSchema({ name: 'ExchangePortalLink' })
export class ExchangePortalLinkDto {
  @ApiProperty({ maxLength: 100, description: "The link's token: what follows `#portal=` in its URL" })
  @IsString()
  @MaxLength(100)
  token: string;
}
