import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { CURSOR_MESSAGE } from './log-cursor.js';

/** `cursor` on a cursor-paged list: the previous page's `nextCursor`, checked by decodeCursor. */
export const CursorQueryField = () =>
  applyDecorators(
    ApiPropertyOptional({
      description: '`nextCursor` of the previous page, as it was given; any other value is a 400',
    }),
    IsOptional(),
    IsString({ message: CURSOR_MESSAGE }),
  );
