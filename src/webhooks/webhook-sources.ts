export const WEBHOOK_SOURCES = [
  'user',
  'automation_platform_1',
  'automation_platform_2',
  'automation_platform_3',
  'automation_platform_4',
] as const;
export type WebhookSource = (typeof WEBHOOK_SOURCES)[number];

/** Real-world names existing automation clients send, in the spec's order (DESIGN 3). */
export const WEBHOOK_SOURCE_ALIASES: Record<string, WebhookSource> = {
  zapier: 'automation_platform_1',
  make: 'automation_platform_2',
  n8n: 'automation_platform_3',
  pipedream: 'automation_platform_4',
};

export const ACCEPTED_SOURCES = [...WEBHOOK_SOURCES, ...Object.keys(WEBHOOK_SOURCE_ALIASES)];

export const canonicalSource = (value: string): WebhookSource =>
  WEBHOOK_SOURCE_ALIASES[value] ?? (value as WebhookSource);

export const TRIGGER_TYPES = ['newSubmission'] as const;
