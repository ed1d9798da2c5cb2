import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsString,
  MaxLength,
  Validate,
  ValidateIf,
  type ValidationArguments,
  ValidatorConstraint,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { isCuid2 } from '../core/ids.js';
import { ACCEPTED_SOURCES, TRIGGER_TYPES } from './webhook-sources.js';

export const MAX_URL_LENGTH = 2048;
export const MAX_CALCULATORS_PER_WEBHOOK = 100;

// Postgres text cannot hold NUL, and no URL or name needs a control character.
const hasControlCharacter = (value: string): boolean =>
  [...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

@ValidatorConstraint({ name: 'httpUrl' })
class HttpUrlConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    // Also requires the `//` authority form, so `http:example.com` is not taken for a URL.
    if (typeof value !== 'string' || /\s/.test(value) || hasControlCharacter(value) || !/^https?:\/\//i.test(value)) {
      return false;
    }
    try {
      const url = new URL(value);
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname.length > 0;
    } catch {
      return false;
    }
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must be an absolute http or https URL`;
  }
}

// Credentials in the URL would be shown in every response and log; a receiver authenticates deliveries by their signature.
@ValidatorConstraint({ name: 'noCredentials' })
class NoCredentialsConstraint implements ValidatorConstraintInterface {
  // A value that is not a URL is HttpUrlConstraint's to report.
  validate(value: unknown): boolean {
    if (typeof value !== 'string' || !URL.canParse(value)) return true;
    const url = new URL(value);
    return url.username === '' && url.password === '';
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must not contain credentials (user:password@ or user@ before the host)`;
  }
}

@ValidatorConstraint({ name: 'cuid2Each' })
class Cuid2EachConstraint implements ValidatorConstraintInterface {
  // A non-array is IsArray's to report; this message reads the array's entries.
  validate(value: unknown): boolean {
    return !Array.isArray(value) || value.every(isCuid2);
  }

  defaultMessage(args: ValidationArguments): string {
    const bad = (args.value as unknown[]).find((v) => !isCuid2(v));
    return `${args.property} must contain only CUID2 calculator ids (got ${JSON.stringify(bad)})`;
  }
}

@ValidatorConstraint({ name: 'noControlCharacters' })
export class NoControlCharactersConstraint implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value !== 'string' || !hasControlCharacter(value);
  }

  defaultMessage(args: ValidationArguments): string {
    return `${args.property} must not contain control characters`;
  }
}

/** Present means not null: an optional field sent as null is an error, not a default. */
const unlessUndefined = (property: string) => ValidateIf((o: Record<string, unknown>) => o[property] !== undefined);

/** A receiver's url, as webhooks and operational webhooks take it (the SSRF guard's check is the service's). */
export const IsReceiverUrl = (example: string) =>
  applyDecorators(
    // No `format: uri`: that is ASCII only (RFC 3986), and an address as a browser takes it may hold any character.
    ApiProperty({
      maxLength: MAX_URL_LENGTH,
      description:
        'Absolute http(s) URL that receives the data, without credentials (`user:password@`). Characters outside ' +
        'ASCII are taken as a browser takes them and percent-encoded when a delivery is sent. While the SSRF guard ' +
        'is on (production), a host that is `localhost` (or `*.localhost`) or a non-public IP literal (IPv4, or an ' +
        'IPv6 form embedding one) is refused; a name is checked when a delivery is sent.',
      example,
    }),
    IsString(),
    MaxLength(MAX_URL_LENGTH),
    Validate(HttpUrlConstraint),
    Validate(NoCredentialsConstraint),
  );

@ApiSchema({ name: 'CreateWebhook' })
export class CreateWebhookDto {
  @IsReceiverUrl('https://example.com/hooks/calc')
  url: string;

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...TRIGGER_TYPES] },
    minItems: 1,
    default: [...TRIGGER_TYPES],
    description: 'Trigger event types; only `newSubmission` is supported. When omitted, `["newSubmission"]`.',
  })
  @unlessUndefined('triggers')
  @IsArray()
  @ArrayNotEmpty()
  @IsIn(TRIGGER_TYPES, { each: true, message: `each value in triggers must be one of: ${TRIGGER_TYPES.join(', ')}` })
  triggers?: string[];

  @ApiProperty({
    type: 'array',
    items: { type: 'string', pattern: '^[0-9a-z]{2,32}$' },
    minItems: 1,
    maxItems: MAX_CALCULATORS_PER_WEBHOOK,
    description: "CUID2 ids of calculators of the key's workspace",
  })
  @IsArray()
  @ArrayNotEmpty()
  @ArrayMaxSize(MAX_CALCULATORS_PER_WEBHOOK)
  @Validate(Cuid2EachConstraint)
  calculators: string[];

  @ApiPropertyOptional({ maxLength: 255, default: '', description: 'Name for the webhook' })
  @unlessUndefined('name')
  @IsString()
  @MaxLength(255)
  @Validate(NoControlCharactersConstraint)
  name?: string;

  @ApiPropertyOptional({
    enum: ACCEPTED_SOURCES,
    default: 'user',
    description:
      'Spec 2.2 value; the platform names zapier, make, n8n, pipedream are stored as automation_platform_1..4',
  })
  @unlessUndefined('source')
  @IsString()
  @IsIn(ACCEPTED_SOURCES, { message: `source must be one of: ${ACCEPTED_SOURCES.join(', ')}` })
  source?: string;
}
