import { createHash } from 'node:crypto';
import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { ApiError } from './api-error.js';
import { isCuid2 } from '../ids.js';

/** A position in a workspace's log (deliveries, audit events): the last item of a page, in (time, id) order. */
export interface LogPosition {
  createdAt: Date;
  id: string;
}

export const CURSOR_MESSAGE = 'is not a cursor of this workspace: pass nextCursor of the previous page as it is';
const CURSOR_PATTERN = /^(\d{1,15})\.([a-z0-9]{1,32})\.([A-Za-z0-9_-]{16})$/;

// The cursor only positions within the caller's own workspace (every query is scoped to it), so it
// needs no secret: the digest binds it to the workspace, catching edits and cursors of another one.
const digest = (workspaceId: string, ms: number, id: string): string =>
  createHash('sha256').update(`${workspaceId}.${ms}.${id}`).digest('base64url').slice(0, 16);

export function encodeCursor(workspaceId: string, { createdAt, id }: LogPosition): string {
  const ms = createdAt.getTime();
  return Buffer.from(`${ms}.${id}.${digest(workspaceId, ms, id)}`).toString('base64url');
}

/** The position a cursor names; a cursor that is not one this workspace was given is a 400 naming it. */
export function decodeCursor(workspaceId: string, raw: string | undefined): LogPosition | undefined {
  if (raw === undefined) return undefined;
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(raw) ? Buffer.from(raw, 'base64url') : null;
  const match = text ? CURSOR_PATTERN.exec(text.toString('latin1')) : null;
  if (!match || !isCuid2(match[2]) || digest(workspaceId, Number(match[1]), match[2]) !== match[3]) {
    throw ApiError.invalidField('cursor', CURSOR_MESSAGE);
  }
  return { createdAt: new Date(Number(match[1])), id: match[2] };
}

/**
 * A page of a workspace's log newest first by (`time`, id), `query` already scoped to the workspace and
 * filtered; the keyset its index serves. `positionOf` reads a row's position for the next page's cursor.
 */
export async function newestFirstPage<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  { workspaceId, time, after, limit, positionOf }: NewestFirst<T>,
): Promise<{ rows: T[]; nextCursor: string | null }> {
  const alias = query.alias;
  query
    .orderBy(`${alias}.${time}`, 'DESC')
    .addOrderBy(`${alias}.id`, 'DESC')
    .limit(limit + 1);
  if (after) {
    query.andWhere(`(${alias}.${time}, ${alias}.id) < (:afterAt, :afterId)`, {
      afterAt: after.createdAt,
      afterId: after.id,
    });
  }
  const found = await query.getMany();
  const rows = found.slice(0, limit);
  const last = rows.at(-1);
  return { rows, nextCursor: found.length > limit && last ? encodeCursor(workspaceId, positionOf(last)) : null };
}

interface NewestFirst<T> {
  workspaceId: string;
  /** The time column, as SQL names it. */
  time: string;
  after?: LogPosition;
  limit: number;
  positionOf: (row: T) => LogPosition;
}
