/** The stable codes of the webhook sink (SinkModule.codes): in log lines and dead-letter reasons. */
export const WEBHOOK_CODES = {
  TLS_VERIFICATION_OFF: 'a sink does not verify TLS certificates',
  WEBHOOK_REDIRECT: 'a webhook answered with a redirect, which is never followed',
  TEMPLATE_FAILED: 'a payload template does not compile (exit 2 at validate) or failed on one event (that event is dead-lettered)',
  TEMPLATE_LIMIT:
    'a payload template ran past its CPU time, memory or size limit and was stopped (that event is dead-lettered as TEMPLATE_FAILED)',
  TEMPLATE_DELAYED:
    'a payload template was not given its CPU time within 50 times its limit, 5 s at least (a busy machine) and was stopped; that event is tried again',
} as const;
