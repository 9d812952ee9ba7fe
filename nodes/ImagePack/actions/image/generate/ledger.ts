/**
 * The ledger: every value Generate writes to n8n's deduplication store, declared once. No other file
 * builds or matches these strings; durable.ts stores them, identity.ts names an item's.
 *
 * | Kind    | Value                                  | Written                          | Ends                                              |
 * | ------- | -------------------------------------- | -------------------------------- | ------------------------------------------------- |
 * | `send`  | `send <run> <ask> <occurrence>`        | before a send of the run         | refused: taken out; paid: the sends' budget       |
 * | `again` | `again <execution> <send>`             | before a retry sends a saved one | as `send`                                         |
 * | `key`   | `key <node> <fingerprint> <key>`       | with the send of a keyed item    | refused: taken out; paid: the keys' budget        |
 * | `open`  | `open <node> <fingerprint> <key>`      | beside `key`                     | taken out when its node run ends with the answer  |
 * | `tool`  | `tool <ask> <hour>` (this and next)    | before a call with no run        | taken out once the caller has the answer          |
 * | `began` | `began <run>`                          | a plain run's first node run     | the sends' budget                                 |
 *
 * `<run>` is the run a retry shares (identity.ts `runName`; before n8n 2.14 a send is also written
 * under the trigger's items, the same kind under another run). `<ask>` is what was asked and by
 * which key (`askOf`). A key names its account's fingerprint: one key under two accounts is two
 * generations. MD5 hashes are what n8n keeps: a value says "this was recorded", never what it came to.
 */

/** One hour-long window of a tool call's record; a call is found in this one and the next. */
export const TOOL_WINDOW_MS = 60 * 60_000;

export type Kind = 'send' | 'again' | 'key' | 'open' | 'tool' | 'began';

/** An ask as the ledger counts it: what is asked (the request's digest) and by which key. */
export function askOf(digest: string, fingerprint: string): string {
	return `${digest} ${fingerprint}`;
}

export const ledger = {
	send: (run: string, ask: string, occurrence: number) => `send ${run} ${ask} ${occurrence}`,
	/** A send made again after execution `from` saved a record of it (a retry of that execution). */
	again: (from: string, send: string) => `again ${from} ${send}`,
	key: (node: string, fingerprint: string, key: string) => `key ${node} ${fingerprint} ${key}`,
	open: (node: string, fingerprint: string, key: string) => `open ${node} ${fingerprint} ${key}`,
	/** A call with no run to name: the ask in the current window and the next. */
	tool: (ask: string, now: number) => {
		const window = Math.floor(now / TOOL_WINDOW_MS);
		return [window, window + 1].map((at) => `tool ${ask} ${at}`);
	},
	began: (run: string) => `began ${run}`,
};

export function kindOf(value: string): Kind {
	return value.slice(0, value.indexOf(' ')) as Kind;
}

/**
 * A value as the claims' row (the workflow's, shared by its nodes) holds it: a key's values name
 * their node already, sends get it.
 */
export function inClaimsRow(node: string, value: string): string {
	const kind = kindOf(value);
	return kind === 'key' || kind === 'open' ? value : `claim ${node} ${value}`;
}
