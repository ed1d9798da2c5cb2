import { prepared } from '../core/database/prepared.js';

/**
 * SQL because the page's submission counts are summed from their shards in the same round trip with one
 * index scan for the whole page (ANY of its ids), not a subquery per row as the ORM would.
 * Columns are named as CalculatorEntity's properties. Postgres formats the timestamps (ISO 8601 UTC,
 * milliseconds, as Date.toISOString): parsing them into Dates to format them again costs the api more
 * CPU than the rest of the page.
 */
export const CALCULATORS_LIST = prepared(
  'calculators_list',
  `WITH page AS MATERIALIZED (
     SELECT id, workspace_id, folder_id, name, slug, status, elements, layouts, variables, submit_actions, theme_id,
            template_visibility, template_calculator_id, clones_count, impressions_count, last_impression_at,
            new_element_count, created_at, updated_at, removed_at
     FROM calculators WHERE workspace_id = $1 AND removed_at IS NULL
     ORDER BY created_at, id LIMIT $2 OFFSET $3
   )
   SELECT p.id, p.workspace_id AS "workspaceId", p.folder_id AS "folderId", p.name, p.slug, p.status, p.elements,
     p.layouts, p.variables, p.submit_actions AS "submitActions", p.theme_id AS "themeId",
     p.template_visibility AS "templateVisibility", p.template_calculator_id AS "templateCalculatorId",
     p.clones_count AS "clonesCount", p.impressions_count AS "impressionsCount",
     p.new_element_count AS "newElementCount", coalesce(k.count, 0)::int AS "submissionsCount",
     to_char(p.last_impression_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "lastImpressionAt",
     to_char(k.last_submission_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "lastSubmissionAt",
     to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
     to_char(p.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "updatedAt"
   FROM page p
   LEFT JOIN (
     SELECT calculator_id, sum(count) AS count, max(last_submission_at) AS last_submission_at
     FROM calculator_submission_counters WHERE calculator_id = ANY (ARRAY(SELECT id FROM page))
     GROUP BY calculator_id
   ) k ON k.calculator_id = p.id
   ORDER BY p.created_at, p.id`,
);
