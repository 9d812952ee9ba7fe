/**
 * Every bound of the HTTP layer, defined once. `limits` and `retryPolicy` are mutable only so tests
 * can lower them; the shape of the policy is fixed.
 */

const MIB = 1024 * 1024;

/** A whole read call (list, detail), retries included. */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** A whole file download (redirects and body). */
export const DOWNLOAD_TIMEOUT_MS = 300_000;
/** Resolving one signed link (a single GET, retries included). */
export const LINK_TIMEOUT_MS = 30_000;
/** How long the file endpoint's signed link works: one hour, as the API states for its redirect. */
export const SIGNED_LINK_VALIDITY_MS = 60 * 60 * 1000;
/** Taken off the hour in a link's stated expiry: the clocks of n8n and the service may differ. */
export const SIGNED_LINK_MARGIN_MS = 5 * 60 * 1000;

/** A downloaded file's cap unless the Max File Size option says otherwise. */
export const DEFAULT_MAX_FILE_BYTES = 200 * MIB;

export const limits = {
	/** A JSON answer larger than this is refused (a list page of 200 records is about 60 KiB). */
	maxJsonBytes: 16 * MIB,
	/** Error bodies are short; only this much of one is read. */
	maxErrorBodyBytes: 64 * 1024,
	/** Redirect hops followed (without the key) after the file endpoint's own 302. */
	maxSignedLinkRedirects: 5,
};

export const retryPolicy = {
	/** Further attempts after `429 rate_limited`. */
	rateLimitRetries: 3,
	/** A Retry-After longer than this is not waited for: the error is reported instead. */
	maxRetryAfterSeconds: 60,
	/** Further attempts of an idempotent request after 502/503/504, a broken answer or a connection error. */
	transientRetries: 2,
	/** First backoff; doubled on every further attempt. */
	backoffMs: 500,
};

export function backoff(attempt: number): number {
	return retryPolicy.backoffMs * 2 ** (attempt - 1);
}

export function formatBytes(bytes: number): string {
	if (bytes >= MIB) return `${Math.round((bytes / MIB) * 10) / 10} MiB`;
	if (bytes >= 1024) return `${Math.round(bytes / 1024)} KiB`;
	return `${bytes} bytes`;
}
