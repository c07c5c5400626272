/** The stable codes of the webhook sink (SinkModule.codes): in log lines and dead-letter reasons. */
export const WEBHOOK_CODES = {
  TLS_VERIFICATION_OFF: 'a sink does not verify TLS certificates',
  WEBHOOK_REDIRECT: 'a webhook answered with a redirect, which is never followed',
  TEMPLATE_FAILED: 'a payload template does not compile (exit 2 at validate) or failed on one event (that event is dead-lettered)',
  TEMPLATE_LIMIT:
    'a payload template ran past its time, memory or size limit and was stopped (that event is dead-lettered as TEMPLATE_FAILED)',
} as const;
