/**
 * Random histories of what users and n8n do to Generate, run for real (n8n-core's WorkflowExecute
 * through test/harness/engine.ts, the emulator over HTTP, the stand-in of n8n's deduplication store)
 * and checked after every command against the model of the promises (promises.ts). fast-check's
 * model-based commands generate them, shrink a failing one and replay it by seed and path.
 *
 * A history is a list of commands: a new execution, Executions → Retry of a killed one (from its
 * start, after a restart) or of a failed or stopped one (original or saved workflow, edited), and a
 * restart. An execution may be interrupted at one of its awaits: at its n-th store call (killed
 * once the call was written or before it is made; the user's Stop; the call failing as a busy
 * database; another n8n process running another execution there), at a request to the service (a
 * send or a download held there, then killed or stopped), or at a send held while this process runs
 * another execution.
 *
 * Why not `fc.scheduler`: the awaits here wait on real HTTP and real timers (Retry On Fail's wait),
 * which a scheduler cannot see, so it cannot tell when the system is idle; the interrupts are
 * chosen by number (the n-th store call, the n-th request of a route) instead, which fast-check
 * generates and shrinks the same.
 */
// A test file: n8n Cloud's rules for a node's own code (no imports, no process, no console) do not apply.
/* eslint-disable @n8n/community-nodes/no-restricted-globals, @n8n/community-nodes/require-node-api-error, no-console */
// eslint-disable-next-line @n8n/community-nodes/no-restricted-imports
import { AsyncLocalStorage } from 'async_hooks';
import fc from 'fast-check';
import type {
	IDataObject,
	INodeExecutionData,
	INodeParameters,
	INodeType,
	IRunExecutionData,
	ITaskData,
} from 'n8n-workflow';
import { sleep } from 'n8n-workflow';

import type { Emulator } from '../emulator';
import { clearDeduplicationStore, setStoreHook, type StoreCall } from '../harness/deduplication';
import {
	type EngineOptions,
	type EngineRun,
	type StartedRun,
	startInEngine,
	startRetryAfterKill,
	startRetryExecution,
} from '../harness/engine';
import {
	type Account,
	type Attempt,
	type Caps,
	type Credential,
	type Report,
	type Request,
	type Row,
	type Turn,
	broken,
	keyed,
	parsePrompt,
	promptOf,
} from './promises';

// What a command says.

export type OnError = 'stop' | 'errorOutput' | 'continue';
// Stop Workflow weighs twice: a failed item stops its batch, and the next try meets what the last left.
const onErrorArb = fc.constantFrom<OnError>('stop', 'stop', 'errorOutput', 'continue');

export type FaultKind =
	| 'refund500'
	| 'resetAfter'
	| 'credits402'
	/** The answer held after the charge until the node's Timeout (1 s) gives up: `timeout`. */
	| 'timeoutAfter'
	/** A download of the product's execution fails (a 500 on the file route): the generation stays. */
	| 'download500';
/** An emulator fault on the next request(s) of a product. */
export interface Fault {
	product: string;
	kind: FaultKind;
	skip: number;
}

export interface RunSpec {
	/** The node's runs in one execution: a loop's batches, or an agent's calls (one row each). */
	runs: Row[][];
	concurrency: 1 | 8;
	/** Retry On Fail with this many tries. */
	tries?: 2 | 3;
	/**
	 * On Error: Stop Workflow, Continue (using error output), or Continue (Continue On Fail: the
	 * error in the regular output, where n8n's Retry On Fail tries again when item 0 failed).
	 */
	onError: OnError;
	/** Resend Uncertain Generations (a new execution has it too: it must change nothing there). */
	resend: boolean;
	credential: Credential;
	/** AI Agent 3.x: each run is a call, its item carrying the model's `toolCallId`. */
	asTool: boolean;
	/** A saved workflow that still carries Clear Idempotency Key on (removed: ignored). */
	legacyClear?: boolean;
	/** Download Images (then the downloads follow the last generation with Concurrency 1). */
	download?: boolean;
	/** Max Credits per Execution and per Item (0 or absent: no limit); an image here costs 12. */
	maxPerExecution?: number;
	maxPerItem?: number;
	/** Timeout (Seconds) 1, for the `timeoutAfter` fault (else the node's default). */
	timeout1?: boolean;
}

export type Interrupt =
	/**
	 * n8n killed once the execution's store call `at` was written, or (`killBefore`) just before it
	 * was made; past its last call: after the node finished, before n8n saved anything.
	 */
	| { kind: 'kill' | 'killBefore'; at: number }
	/** The user's Stop once store call `at` was written (past its last call: nothing to stop). */
	| { kind: 'stop'; at: number }
	/**
	 * The `skip + 1`-th request on `route` held at the service (`before` it is handled, or `after`
	 * it was charged: a lost answer), then n8n killed (the request never answered) or the user's Stop.
	 */
	| {
			kind: 'killAt' | 'stopAt';
			route: 'generate' | 'file';
			skip: number;
			when: 'before' | 'after';
	  }
	/** Store calls `at` … `at + times - 1` fail as a busy database. */
	| { kind: 'busy'; at: number; times: number }
	/** After store call `at`, another n8n process (a queue-mode worker) runs `other` to its end. */
	| { kind: 'pause'; at: number; other: RunSpec }
	/** The send of `product` held at the service while this n8n process runs `other` to its end. */
	| { kind: 'hold'; product: string; other: RunSpec };

/** What "Retry with currently saved workflow" brings: the node's parameters and credential edited. */
export interface Edit {
	resend?: boolean;
	legacyClear?: boolean;
	credential?: Credential;
	onError?: OnError;
	maxPerExecution?: number;
}

// The store scheduler: each store call of an execution is numbered; an interrupt acts at one.

const running = new AsyncLocalStorage<number>();
const never = () => new Promise<never>(() => {});

interface Plan {
	interrupt: Interrupt;
	reached: () => void;
	resume: Promise<void>;
}
const plans = new Map<number, Plan>();
const callsOf = new Map<number, number>();
const numbered = new WeakMap<StoreCall, number>();
const dead = new Set<number>();

async function storeHook(call: StoreCall, phase: 'before' | 'after'): Promise<void> {
	const id = running.getStore();
	if (id === undefined) return;
	if (dead.has(id)) return await never(); // the process is gone: nothing of it runs on
	const plan = plans.get(id);
	if (phase === 'before') {
		const n = (callsOf.get(id) ?? 0) + 1;
		callsOf.set(id, n);
		numbered.set(call, n);
		if (process.env.MODEL_TRACE) {
			console.log(
				`#${id} store call ${n}: ${call.kind} ${call.scope} ${call.values.join(' | ').slice(0, 160)}`,
			);
		}
		const i = plan?.interrupt;
		if (i?.kind === 'busy' && n >= i.at && n < i.at + i.times) {
			throw new Error('SQLITE_BUSY: database is locked');
		}
		if (i?.kind === 'killBefore' && n === i.at) {
			dead.add(id);
			plan!.reached();
			return await never();
		}
		return;
	}
	const n = numbered.get(call);
	if (!plan || !('at' in plan.interrupt) || n !== plan.interrupt.at) return;
	if (plan.interrupt.kind === 'kill') {
		dead.add(id);
		plan.reached();
		return await never();
	}
	if (plan.interrupt.kind === 'stop') {
		plan.reached(); // the harness stops the execution; the node goes on to see it
		return;
	}
	if (plan.interrupt.kind === 'pause') {
		plan.reached();
		await plan.resume;
	}
}

/**
 * The node as a freshly started n8n process loads it (nothing held in memory), at the given caps.
 * Only the package's own modules are loaded anew: n8n-workflow (the one library the node imports)
 * is n8n's, shared as in n8n, so a fresh process costs about 15 ms instead of about 250 ms.
 */
async function freshProcess(caps?: Partial<Record<string, number>>): Promise<{
	node: INodeType;
	limits: Record<string, number>;
}> {
	let Fresh: (new () => INodeType) | undefined;
	let limits: Record<string, number> | undefined;
	const workflow = jest.requireActual<object>('n8n-workflow');
	await jest.isolateModulesAsync(async () => {
		jest.doMock('n8n-workflow', () => workflow);
		({ ImagePack: Fresh } = await import('../../nodes/ImagePack/ImagePack.node'));
		({ RECORD_LIMITS: limits } = await import(
			'../../nodes/ImagePack/actions/image/generate/durable'
		));
	});
	// The record's budgets scaled by name, whatever the node calls them now (those it has).
	if (caps) for (const name of Object.keys(caps)) if (name in limits!) limits![name] = caps[name]!;
	return { node: new Fresh!(), limits: limits! };
}

/**
 * The scaled-down budgets (a mode of a history): the node's `RECORD_LIMITS` (durable.ts, an
 * exported object) lowered in each process the test loads, so that histories of a few dozen items
 * with many keys fill them. The claims' row keeps room for two processes' lanes in flight.
 */
export const SCALED_CAPS = { sends: 16, keys: 2, claims: 24, moveAt: 3 };

// What the node's items look like.

function parameters(spec: RunSpec): INodeParameters {
	return {
		resource: 'image',
		operation: 'generate',
		prompt: '={{ $json.sku }}',
		model: 'nano-banana-2',
		ratio: '1:1',
		resolution: '1K',
		options: {
			downloadImages: spec.download === true,
			concurrency: spec.concurrency,
			idempotencyKey: '={{ $json.key }}',
			...(spec.legacyClear && { clearIdempotencyKey: true }),
			resendUncertain: spec.resend,
			...(spec.maxPerExecution && { maxCreditsPerExecution: spec.maxPerExecution }),
			...(spec.maxPerItem && { maxCreditsPerItem: spec.maxPerItem }),
			...(spec.timeout1 && { timeoutSeconds: 1 }),
		},
	};
}

function crashRecovered(atStart: IRunExecutionData): IRunExecutionData {
	// What n8n's crash recovery saves of a loop killed with Save Execution Progress off
	// (generate-cases.test.ts): one recovered run of the node; a retry runs every batch under b + 1.
	const data = JSON.parse(JSON.stringify(atStart)) as IRunExecutionData;
	const name = data.executionData!.nodeExecutionStack[0].node.name;
	const recovered: ITaskData = {
		startTime: Date.now(),
		executionIndex: 0,
		executionTime: 0,
		executionStatus: 'success',
		source: [],
		data: { main: [[{ json: { isArtificialRecoveredEventItem: true } }]] },
	};
	data.resultData.runData[name] = [recovered];
	return data;
}

/** Each item's report in the node's runs of an execution (those after `skip`, kept from before). */
function reportsOf(run: EngineRun, skip: number): Report[] {
	const [tasks = []] = Object.values(run.run.data.resultData.runData);
	const own = tasks.filter(
		(task) => !task.data?.main?.[0]?.[0]?.json?.isArtificialRecoveredEventItem,
	);
	const reports: Report[] = [];
	own.forEach((task, index) => {
		if (index < skip) return;
		const run = index;
		const itemOf = (item: INodeExecutionData, fallback: number) =>
			(item.pairedItem as { item?: number } | undefined)?.item ?? fallback;
		(task.data?.main?.[0] ?? []).forEach((item, at) => {
			const json = item.json;
			if (json.ok === true) {
				reports.push({ run, item: itemOf(item, at), ok: true, turnId: String(json.turn_id) });
			} else if (typeof json.code === 'string') {
				// A tool's failure is its output: `code` and `charged`.
				reports.push({
					run,
					item: itemOf(item, at),
					ok: false,
					code: json.code,
					charge: String(json.charged),
				});
			} else if (json.error) {
				const error = json.error as IDataObject;
				reports.push({
					run,
					item: itemOf(item, at),
					ok: false,
					code: String(error.code),
					charge: String(error.charge),
				});
			}
		});
		(task.data?.main?.[1] ?? []).forEach((item, at) => {
			const error = item.json.error as IDataObject;
			reports.push({
				run,
				item: itemOf(item, at),
				ok: false,
				code: String(error.code),
				charge: String(error.charge),
			});
		});
		const error = task.error as
			| { message?: string; description?: string | null; context?: IDataObject }
			| undefined;
		if (error) {
			const named = /^Item (\d+):/.exec(error.message ?? '');
			const item = Number(error.context?.itemIndex ?? named?.[1] ?? NaN);
			if (!Number.isNaN(item)) {
				const charge = String(error.context?.charge);
				reports.push({ run, item, ok: false, code: String(error.context?.code), charge });
				// Under Stop Workflow the run fails naming each item that may have been charged: "Also
				// reported maybe charged: items 2 (interrupted_send), 3 (network_error)." (earlier: "…
				// reported the same way: items …", "Not sent, and reported so: items …").
				const others =
					/(?:reported the same way|Not sent, and reported so|Also reported maybe charged): items ([^.]*)/.exec(
						error.description ?? '',
					);
				for (const [, at, code] of (others?.[1] ?? '').matchAll(/(\d+) \((\w+)\)/g)) {
					reports.push({ run, item: Number(at), ok: false, code, charge: 'may_have_been_charged' });
				}
			}
		}
	});
	return reports;
}

// The system under test, and the journal the model reads.

let ids = 0;

/** What an attempt is, before it runs (the rest of `Attempt` is what happened). */
export type Journal = Pick<
	Attempt,
	| 'kind'
	| 'from'
	| 'runs'
	| 'credential'
	| 'resend'
	| 'asTool'
	| 'concurrency'
	| 'onError'
	| 'maxPerExecution'
	| 'maxPerItem'
> & { family?: number; timeout1: boolean };

export class System {
	readonly attempts: Attempt[] = [];
	/** Killed executions (their start, for Executions → Retry) and saved ones (their data). */
	readonly killed = new Map<number, StartedRun>();
	readonly finished = new Map<number, EngineRun>();
	private process!: INodeType;
	/** The budgets the node read (RECORD_LIMITS after scaling): what the model allows beyond. */
	private limits: Record<string, number> = {};
	private keys!: Record<Account, string>;
	/** Account A's second API key (the credential `second`: a new key of the same account). */
	private secondKey!: string;
	private accounts!: Map<string, Account>;
	/** Held requests of killed processes, never released (their process is gone). */
	private readonly stale = new Set<number>();
	/** Executions running one inside another (a pause, a hold): only the outermost releases. */
	private depth = 0;

	constructor(
		private readonly emulator: Emulator,
		readonly caps: 'real' | 'scaled',
	) {}

	private get scaled() {
		return this.caps === 'scaled' ? SCALED_CAPS : undefined;
	}

	async start(): Promise<void> {
		const { control } = this.emulator;
		await control.reset();
		clearDeduplicationStore();
		setStoreHook(storeHook);
		await control.setCredits(this.emulator.accountId, 1_000_000);
		const b = await control.createAccount({ credits: 1_000_000 });
		const key = await control.createKey({ accountId: b.accountId });
		this.keys = { A: this.emulator.apiKey, B: key.key };
		this.secondKey = (await control.createKey({ accountId: this.emulator.accountId })).key;
		this.accounts = new Map([
			[this.emulator.accountId, 'A'],
			[b.accountId, 'B'],
		]);
		await this.restart();
	}

	/** n8n restarted: a new process, nothing of the old one's memory. */
	async restart(): Promise<void> {
		const fresh = await freshProcess(this.scaled);
		this.process = fresh.node;
		this.limits = fresh.limits;
	}

	private items(
		rows: Row[],
		asTool: boolean,
		family: number,
		calls: string[] = [],
	): INodeExecutionData[] {
		return rows.map((row, index) => ({
			json: {
				sku: promptOf(row.product, family),
				key: keyed(row.product) ? row.product : '',
				apiKey: this.keys[row.account],
				...(asTool && { toolCallId: calls[index] ?? `call_${++ids}` }),
			},
		}));
	}

	private credentials(credential: RunSpec['credential']) {
		const apiKey =
			credential === 'perItem'
				? '={{ $json.apiKey }}'
				: credential === 'second'
					? this.secondKey
					: this.keys.A;
		return { baseUrl: this.emulator.baseUrl, apiKey };
	}

	/** A new execution's options; `family`: its id, which its prompts carry. */
	options(spec: RunSpec, family: number, nodeType = this.process): EngineOptions {
		return {
			nodeType,
			parameters: parameters(spec),
			credentials: this.credentials(spec.credential),
			runs: spec.runs.map((rows) => this.items(rows, spec.asTool, family)),
			errorOutput: !spec.asTool && spec.onError === 'errorOutput',
			continueOnFail: !spec.asTool && spec.onError === 'continue',
			maxTries: spec.tries,
			asTool: spec.asTool,
		};
	}

	private async window() {
		const { control } = this.emulator;
		const log = await control.requests({ route: 'generate' });
		const turns = await this.paidTurns();
		return { seq: log.at(-1)?.seq ?? 0, turns: new Set(turns.map((turn) => turn.id)) };
	}

	private async paidTurns(): Promise<Array<Omit<Turn, 'seq' | 'at' | 'apiKey'> & { createdAt: number }>> {
		const turns: Array<Omit<Turn, 'seq' | 'at' | 'apiKey'> & { createdAt: number }> = [];
		for (const [accountId, account] of this.accounts) {
			for (const turn of await this.emulator.control.turns(accountId)) {
				if (turn.charged > 0) {
					turns.push({
						id: turn.id,
						prompt: String(turn.prompt),
						account,
						charged: turn.charged,
						createdAt: turn.createdAt,
					});
				}
			}
		}
		return turns.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1));
	}

	/** Waits until the service holds a request of this attempt (true), or the run ends (false). */
	private async heldOrDone(
		done: Promise<unknown>,
		route: 'generate' | 'file',
		prompt?: string,
	): Promise<boolean> {
		let isDone = false;
		void done.then(() => (isDone = true));
		const { control } = this.emulator;
		for (;;) {
			if (isDone) return false;
			const held = (await control.held()).filter(
				(h) =>
					!this.stale.has(h.seq) &&
					h.route === route &&
					(route === 'file' || prompt === undefined || (h.prompt ?? '').endsWith(prompt)),
			);
			if (held.length) return true;
			await sleep(3);
		}
	}

	/**
	 * Runs one execution (`begin` starts it inside the scheduler's context) with its faults and its
	 * interrupt, and journals it.
	 */
	async execute(
		what: Journal,
		begin: (id: number) => StartedRun,
		faults: Fault[],
		interrupt?: Interrupt,
		skipTasks = 0,
	): Promise<Attempt> {
		this.depth++;
		try {
			return await this.run(what, begin, faults, interrupt, skipTasks);
		} finally {
			this.depth--;
		}
	}

	private async run(
		what: Journal,
		begin: (id: number) => StartedRun,
		faults: Fault[],
		interrupt: Interrupt | undefined,
		skipTasks: number,
	): Promise<Attempt> {
		const { control } = this.emulator;
		const id = ++ids;
		const family = what.family ?? id;
		// Faults aim at this execution's own prompts (an execution run inside it has others).
		for (const fault of faults) await control.injectFault(faultOf(fault, what.timeout1, family));
		const before = await this.window();
		let reached = () => {};
		const reachedPoint = new Promise<'reached'>((resolve) => (reached = () => resolve('reached')));
		let resume = () => {};
		const resumed = new Promise<void>((resolve) => (resume = resolve));
		if (interrupt && 'at' in interrupt) plans.set(id, { interrupt, reached, resume: resumed });
		if (interrupt?.kind === 'hold') {
			await control.injectFault({
				route: 'generate',
				kind: 'hold',
				when: 'before',
				promptIncludes: promptOf(interrupt.product, family),
			});
		}
		if (interrupt?.kind === 'killAt' || interrupt?.kind === 'stopAt') {
			await control.injectFault({
				route: interrupt.route,
				kind: 'hold',
				when: interrupt.route === 'file' ? 'before' : interrupt.when,
				skip: interrupt.skip,
				...(interrupt.route === 'generate' && { promptIncludes: ` #${family}.` }),
			});
		}
		const started = running.run(id, () => begin(id));
		const done = started.done.then((run) => ({ run }));
		let run: EngineRun | undefined;
		let killed: Attempt['killed'];
		let endedBefore: number | undefined;
		let stopped = false;
		if (interrupt?.kind === 'kill' || interrupt?.kind === 'killBefore') {
			// Killed at the store call, or (past its last call) after the node finished, before n8n saved.
			const first = await Promise.race([done, reachedPoint]);
			if (first === 'reached') {
				killed = 'running';
				endedBefore = started.nodeRunsEnded?.at(-1);
				await sleep(20); // requests in flight land at the service
			} else killed = 'afterNode';
		} else if (interrupt?.kind === 'stop') {
			const first = await Promise.race([done, reachedPoint]);
			if (first === 'reached') {
				stopped = true;
				started.stop!();
			}
			run = (await done).run;
		} else if (interrupt?.kind === 'killAt' || interrupt?.kind === 'stopAt') {
			if (await this.heldOrDone(done, interrupt.route, ` #${family}.`)) {
				if (interrupt.kind === 'killAt') {
					dead.add(id);
					killed = 'running';
					endedBefore = started.nodeRunsEnded?.at(-1);
					for (const h of await control.held()) this.stale.add(h.seq);
					await sleep(20);
				} else {
					stopped = true;
					started.stop!();
					// The Stop aborts the held request; a node that does not let go is released after a while.
					const first = await Promise.race([done, sleep(500).then(() => 'late' as const)]);
					if (first === 'late') await this.releaseOwn();
					run = (await done).run;
				}
			} else run = (await done).run;
		} else if (interrupt?.kind === 'pause') {
			const first = await Promise.race([done, reachedPoint]);
			if (first === 'reached') {
				try {
					await this.another(interrupt.other, (await freshProcess(this.scaled)).node);
				} finally {
					resume();
				}
			}
			run = (await done).run;
		} else if (interrupt?.kind === 'hold') {
			if (await this.heldOrDone(done, 'generate', promptOf(interrupt.product, family))) {
				try {
					await this.another(interrupt.other, this.process);
				} finally {
					await this.releaseOwn();
				}
			}
			run = (await done).run;
		} else {
			run = (await done).run;
		}
		plans.delete(id);
		await control.clearFaults();
		if (!killed) await this.releaseOwn();
		const after = await this.window();
		const status = run?.run.status;
		const attempt: Attempt = {
			kind: what.kind,
			from: what.from,
			runs: what.runs,
			credential: what.credential,
			resend: what.resend,
			asTool: what.asTool,
			concurrency: what.concurrency,
			onError: what.onError,
			maxPerExecution: what.maxPerExecution,
			maxPerItem: what.maxPerItem,
			id,
			family,
			window: {
				fromSeq: before.seq,
				toSeq: after.seq,
				turnsBefore: before.turns,
				turnsAfter: after.turns,
			},
			outcome: killed
				? 'killed'
				: stopped || status === 'canceled'
					? 'stopped'
					: status === 'error'
						? 'failed'
						: 'finished',
			reports: run && !killed ? reportsOf(run, skipTasks) : [],
			killed,
			endedBefore,
		};
		if (killed) {
			this.killed.set(id, started);
			await this.restart();
		} else {
			this.finished.set(id, run!);
		}
		this.attempts.push(attempt);
		return attempt;
	}

	private async releaseOwn(): Promise<void> {
		const { control } = this.emulator;
		if (this.depth > 1) return;
		for (const h of await control.held())
			if (!this.stale.has(h.seq)) await control.releaseHeld(h.seq);
	}

	/** Another execution, to its end, in `process` (this one, or another n8n process). */
	private async another(spec: RunSpec, process: INodeType): Promise<void> {
		await this.execute(
			journalOf(spec, 'new'),
			(id) => startInEngine(this.options(spec, id, process)),
			[],
		);
	}

	/** A request's API key by name: `A`, `A2` (A's second key), `B`, or as sent. */
	private keyName(authorization = ''): string {
		const key = authorization.replace(/^Bearer /, '');
		if (key === this.secondKey) return 'A2';
		return (Object.keys(this.keys) as Account[]).find((a) => this.keys[a] === key) ?? key;
	}

	/** The world as the model reads it: requests and paid turns from the service, the journal. */
	async world() {
		const log = await this.emulator.control.requests({ route: 'generate' });
		const requests: Request[] = log.map((entry) => ({
			seq: entry.seq,
			prompt: String(entry.prompt),
			account: entry.accountId ? this.accounts.get(entry.accountId) : undefined,
			apiKey: this.keyName(entry.headers.authorization),
			refused: entry.status !== null && entry.status >= 400,
			answered:
				entry.status !== null &&
				entry.status < 300 &&
				entry.fault !== 'reset' &&
				(entry.held === null || entry.held.outcome === 'released'),
			at: entry.at,
		}));
		// Each paid turn answers the latest request of its prompt and account that came before it.
		const matched = new Set<number>();
		const turns: Turn[] = (await this.paidTurns()).map(({ createdAt, ...turn }) => {
			const request = requests
				.filter(
					(r) =>
						!matched.has(r.seq) &&
						r.prompt === turn.prompt &&
						r.account === turn.account &&
						r.at <= createdAt,
				)
				.at(-1);
			if (request) matched.add(request.seq);
			return {
				...turn,
				seq: request?.seq ?? 0,
				apiKey: request?.apiKey ?? '',
				at: request?.at ?? createdAt,
			};
		});
		const caps: Caps = {
			sends: this.limits.sends ?? Infinity,
			keys: this.limits.keys ?? Infinity,
		};
		return { attempts: this.attempts, requests, turns, caps };
	}

	/** The promises broken so far (promises.ts), in words. */
	async broken(): Promise<string[]> {
		const world = await this.world();
		if (process.env.MODEL_TRACE) {
			for (const a of this.attempts) {
				const paid = world.turns.filter(
					(t) => !a.window.turnsBefore.has(t.id) && a.window.turnsAfter.has(t.id),
				);
				console.log(
					`#${a.id} ${a.kind} of #${a.family} ${a.outcome}${a.killed ? ` (${a.killed})` : ''}: paid ${paid.map((t) => `${t.prompt}/${t.account}`).join(', ')}; reports ${a.reports.map((r) => `${r.run}.${r.item} ${r.ok ? 'ok' : `${r.code}/${r.charge}`}`).join(', ')}`,
				);
			}
		}
		return broken(world);
	}

	newProcessNodeType(): INodeType {
		return this.process;
	}

	itemsFor(rows: Row[], asTool: boolean, family: number, calls?: string[]) {
		return this.items(rows, asTool, family, calls);
	}

	/** The row an input item stands for (its product and its account's key). */
	rowOf(json: IDataObject): Row {
		const account = (Object.keys(this.keys) as Account[]).find((a) => this.keys[a] === json.apiKey);
		return { product: parsePrompt(String(json.sku)).product, account: account ?? 'A' };
	}

	credentialsFor(credential: RunSpec['credential']) {
		return this.credentials(credential);
	}
}

function faultOf(fault: Fault, timeout1: boolean, family: number) {
	const base = {
		route: 'generate' as const,
		promptIncludes: promptOf(fault.product, family),
		skip: fault.skip,
	};
	if (fault.kind === 'refund500') return { ...base, kind: 'status' as const, status: 500 };
	if (fault.kind === 'credits402') return { ...base, kind: 'status' as const, status: 402 };
	if (fault.kind === 'download500')
		return { route: 'file' as const, kind: 'status' as const, status: 500, skip: fault.skip };
	// A lost answer held until the node's Timeout (1 s); without it, a reset after the charge.
	if (fault.kind === 'timeoutAfter' && timeout1)
		return { ...base, kind: 'hold' as const, when: 'after' as const };
	return { ...base, kind: 'reset' as const, when: 'after' as const };
}

function journalOf(spec: RunSpec, kind: Attempt['kind']): Journal {
	return {
		kind,
		runs: spec.runs,
		credential: spec.credential,
		resend: spec.resend,
		asTool: spec.asTool,
		concurrency: spec.concurrency,
		onError: spec.asTool ? 'continue' : spec.onError,
		maxPerExecution: spec.maxPerExecution ?? 0,
		maxPerItem: spec.maxPerItem ?? 0,
		timeout1: spec.timeout1 === true,
	};
}

// The commands.

export interface Model {
	/** Executions n8n was killed in, and failed or stopped executions that n8n offers to retry. */
	killed: number[];
	failed: number[];
	/** Each execution's spec as it last ran (a retry's, edited). */
	specs: Map<number, RunSpec>;
	families: Map<number, number>;
}

type Command = fc.AsyncCommand<Model, System>;

async function expectPromisesKept(system: System): Promise<void> {
	const found = await system.broken();
	if (found.length) throw new Error(`Promises broken:\n- ${found.join('\n- ')}`);
}

function remember(model: Model, attempt: Attempt, spec: RunSpec): void {
	model.specs.set(attempt.id, spec);
	model.families.set(attempt.id, attempt.family);
	if (attempt.outcome === 'killed') model.killed.push(attempt.id);
	if (attempt.outcome === 'failed' || attempt.outcome === 'stopped') model.failed.push(attempt.id);
}

const show = (value: unknown) =>
	value === undefined ? 'undefined' : JSON.stringify(value).replace(/"(\w+)":/g, '$1:');

export class NewExecution implements Command {
	constructor(
		readonly spec: RunSpec,
		readonly faults: Fault[],
		readonly interrupt?: Interrupt,
	) {}

	check = () => true;

	async run(model: Model, system: System): Promise<void> {
		const attempt = await system.execute(
			journalOf(this.spec, 'new'),
			(id) => startInEngine(system.options(this.spec, id)),
			this.faults,
			this.interrupt,
		);
		remember(model, attempt, this.spec);
		await expectPromisesKept(system);
	}

	toString = () =>
		`new NewExecution(${show(this.spec)}, ${show(this.faults)}, ${show(this.interrupt)})`;
}

export class RetryAfterKill implements Command {
	constructor(
		readonly target: number,
		readonly change: {
			reorder: boolean;
			crashRecovered: boolean;
			repeatCall: boolean;
			edit?: Edit;
			/** The retry's first row refused once (a refunded 500): its try comes after the asking. */
			aim?: boolean;
		},
		readonly faults: Fault[],
		readonly interrupt?: Interrupt,
	) {}

	check = (model: Readonly<Model>) => model.killed.length > 0;

	async run(model: Model, system: System): Promise<void> {
		const id = model.killed[this.target % model.killed.length];
		const killed = system.killed.get(id)!;
		const before = model.specs.get(id)!;
		const { reorder, repeatCall, edit = {} } = this.change;
		// Upstream runs again and may return the rows in another order; an agent calls anew.
		let runs = reorder ? before.runs.map((rows) => [...rows].reverse()) : before.runs;
		if (before.asTool && repeatCall) runs = [...runs, runs.at(-1)!];
		// The harness restarts the node with its settings as they were (On Error included).
		const spec: RunSpec = { ...before, ...edit, onError: before.onError, runs };
		const loop = before.runs.length > 1 && !before.asTool && this.change.crashRecovered;
		const from = loop ? { ...killed, atStart: crashRecovered(killed.atStart) } : killed;
		const nodeType = system.newProcessNodeType();
		const family = model.families.get(id)!;
		const changes = {
			nodeType,
			parameters: parameters(spec),
			credentials: system.credentialsFor(spec.credential),
			runs: runs.map((rows) => system.itemsFor(rows, spec.asTool, family)),
		};
		const attempt = await system.execute(
			{ ...journalOf(spec, 'retryAfterKill'), family, from: id },
			() => startRetryAfterKill(from, changes),
			this.change.aim ? aimed(spec, this.faults) : this.faults,
			this.interrupt,
		);
		remember(model, attempt, spec);
		await expectPromisesKept(system);
	}

	toString = () =>
		`new RetryAfterKill(${this.target}, ${show(this.change)}, ${show(this.faults)}, ${show(this.interrupt)})`;
}

export class RetryExecution implements Command {
	constructor(
		readonly target: number,
		/** undefined: "Retry with original workflow". */
		readonly edit: Edit | undefined,
		readonly faults: Fault[],
		readonly interrupt?: Interrupt,
	) {}

	check = (model: Readonly<Model>) => model.failed.length > 0;

	async run(model: Model, system: System): Promise<void> {
		const id = model.failed[this.target % model.failed.length];
		const failed = system.finished.get(id)!;
		const before = model.specs.get(id)!;
		const spec: RunSpec = { ...before, ...this.edit };
		// The node's runs kept from the saved record (reported then): a retry reports only the others.
		const [tasks = []] = Object.values(failed.run.data.resultData.runData);
		const kept = tasks.filter(
			(task) =>
				task.error === undefined &&
				!task.data?.main?.[0]?.[0]?.json?.isArtificialRecoveredEventItem,
		).length;
		const saved = this.edit
			? ([
					parameters(spec),
					{
						credentials: system.credentialsFor(spec.credential),
						errorOutput: !spec.asTool && spec.onError === 'errorOutput',
						continueOnFail: !spec.asTool && spec.onError === 'continue',
					},
				] as const)
			: ([undefined, {}] as const);
		// What the retry runs: the kept runs, then what n8n's saved stack holds (the failed run put
		// back on it; after a Stop, not the stopped run: n8n runs the batches after it).
		const stack = failed.run.data.executionData?.nodeExecutionStack ?? [];
		spec.runs = [
			...before.runs.slice(0, kept),
			...stack.map((entry) => (entry.data.main[0] ?? []).map((item) => system.rowOf(item.json))),
		];
		const nodeType = system.newProcessNodeType();
		const attempt = await system.execute(
			{ ...journalOf(spec, 'retryExecution'), family: model.families.get(id), from: id },
			() => startRetryExecution(failed, saved[0], { ...saved[1], nodeType }),
			this.faults,
			this.interrupt,
			kept,
		);
		// n8n offers Retry until one of the execution's retries succeeds.
		if (attempt.outcome === 'finished') model.failed = model.failed.filter((other) => other !== id);
		remember(model, attempt, spec);
		await expectPromisesKept(system);
	}

	toString = () =>
		`new RetryExecution(${this.target}, ${show(this.edit)}, ${show(this.faults)}, ${show(this.interrupt)})`;
}

export class Restart implements Command {
	check = () => true;

	async run(_model: Model, system: System): Promise<void> {
		await system.restart();
	}

	toString = () => 'new Restart()';
}

// The generator.

/**
 * Features left out of the histories (`MODEL_WITHOUT=tool,stop`), to look past a break found
 * already: resend, tool, perItem, keys, faults, kill, stop, busy, pause, hold, caps, download,
 * legacyClear, retryExecution, retryAfterKill, scaled.
 */
const without = new Set((process.env.MODEL_WITHOUT ?? '').split(',').filter(Boolean));
const unless = <T>(feature: string, arbitrary: fc.Arbitrary<T>, otherwise: T): fc.Arbitrary<T> =>
	without.has(feature) ? fc.constant(otherwise) : arbitrary;

/** Two plain products and two keys often (twins are common); four more keys now and then (the record's key budget). */
export const PRODUCTS = without.has('keys') ? ['p0', 'p1', 'p2'] : ['p0', 'p1', 'k0', 'k1'];
const MORE_KEYS = without.has('keys') ? [] : ['k2', 'k3', 'k4', 'k5'];
const productArb = MORE_KEYS.length
	? fc.oneof(
			{ weight: 5, arbitrary: fc.constantFrom(...PRODUCTS) },
			{ weight: 1, arbitrary: fc.constantFrom(...MORE_KEYS) },
		)
	: fc.constantFrom(...PRODUCTS);

const rowArb: fc.Arbitrary<Row> = fc.record({
	product: productArb,
	account: fc.constantFrom<Account>('A', 'B'),
});

const specArb: fc.Arbitrary<RunSpec> = fc
	.record({
		asTool: unless(
			'tool',
			fc.oneof(
				{ weight: 1, arbitrary: fc.constant(true) },
				{ weight: 3, arbitrary: fc.constant(false) },
			),
			false,
		),
		batches: fc.array(fc.array(rowArb, { minLength: 1, maxLength: 4 }), {
			minLength: 1,
			maxLength: 3,
		}),
		calls: fc.array(rowArb, { minLength: 1, maxLength: 3 }),
		twin: fc.boolean(),
		concurrency: fc.constantFrom<1 | 8>(1, 1, 8),
		tries: fc.option(fc.constantFrom<2 | 3>(2, 3), { nil: undefined }),
		onError: onErrorArb,
		resend: unless('resend', fc.boolean(), false),
		legacyClear: unless('legacyClear', fc.constantFrom(false, false, false, true), false),
		download: unless('download', fc.constantFrom(false, false, true), false),
		maxPerExecution: unless('caps', fc.constantFrom(0, 0, 0, 24, 36), 0),
		maxPerItem: unless('caps', fc.constantFrom(0, 0, 0, 0, 0, 12, 11), 0),
		credential: unless(
			'perItem',
			fc.constantFrom<'fixed' | 'perItem'>('fixed', 'perItem'),
			'fixed',
		),
	})
	.map(({ batches, calls, asTool, twin, ...rest }) => ({
		...rest,
		asTool,
		// A twin: the first row again at the end of its batch (two rows, one key or one ask).
		runs: asTool
			? calls.map((row) => [row])
			: batches.map((rows, index) => (twin && index === 0 ? [...rows, rows[0]] : rows)),
	}));

const faultKindArb = fc.constantFrom<FaultKind>(
	'refund500',
	'refund500',
	'resetAfter',
	'resetAfter',
	'credits402',
	'download500',
	'timeoutAfter',
);
const faultsArb: fc.Arbitrary<Fault[]> = unless(
	'faults',
	fc.array(
		// Keyed products and refusals weigh more: a refused keyed row retried (its key let go, and
		// used by a twin or another execution meanwhile) is where keys meet retries.
		fc.record({
			product: fc.constantFrom(...PRODUCTS, ...PRODUCTS.filter(keyed)),
			kind: faultKindArb,
			skip: fc.nat(1),
		}),
		{ maxLength: 2 },
	),
	[],
);

/** A command's spec with Timeout 1 s when one of its faults is a lost answer to wait out. */
const timed = (spec: RunSpec, faults: Fault[]): RunSpec =>
	faults.some((f) => f.kind === 'timeoutAfter') ? { ...spec, timeout1: true } : spec;

/**
 * Half the new executions and retries after a kill refuse their first row's first request (a
 * refunded 500): with Retry On Fail, Continue and a twin row, the refused row's next try meets its
 * key used by the twin; in a retry, the next try meets rows its first never reached.
 */
function aimed(spec: RunSpec, faults: Fault[]): Fault[] {
	if (without.has('faults')) return faults;
	return [{ product: spec.runs[0][0].product, kind: 'refund500', skip: 0 }, ...faults.slice(1)];
}

// Early store calls weigh more: a stop before the first sends leaves rows a retry must still send.
const storeCall = fc.oneof(
	{ weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }) },
	{ weight: 1, arbitrary: fc.integer({ min: 1, max: 14 }) },
);
const atRequest = fc.record({
	route: fc.constantFrom<'generate' | 'file'>('generate', 'generate', 'file'),
	skip: fc.nat(3),
	when: fc.constantFrom<'before' | 'after'>('before', 'after'),
});
const interrupts: Array<{ feature: string; weight: number; arbitrary: fc.Arbitrary<Interrupt> }> = [
	{
		feature: 'kill',
		weight: 4,
		arbitrary: fc.record({
			kind: fc.constantFrom('kill' as const, 'killBefore' as const),
			at: storeCall,
		}),
	},
	{
		feature: 'kill',
		weight: 1,
		arbitrary: atRequest.map((at) => ({ kind: 'killAt' as const, ...at })),
	},
	{
		feature: 'stop',
		weight: 1,
		arbitrary: fc.record({ kind: fc.constant('stop' as const), at: storeCall }),
	},
	{
		feature: 'stop',
		weight: 2,
		arbitrary: atRequest.map((at) => ({ kind: 'stopAt' as const, ...at })),
	},
	{
		feature: 'busy',
		weight: 1,
		arbitrary: fc.record({
			kind: fc.constant('busy' as const),
			at: storeCall,
			times: fc.integer({ min: 1, max: 2 }),
		}),
	},
	{
		feature: 'pause',
		weight: 2,
		arbitrary: fc.record({ kind: fc.constant('pause' as const), at: storeCall, other: specArb }),
	},
	{
		feature: 'hold',
		weight: 1,
		arbitrary: fc.record({
			kind: fc.constant('hold' as const),
			product: fc.constantFrom(...PRODUCTS),
			other: specArb,
		}),
	},
];
const kept = interrupts.filter(({ feature }) => !without.has(feature));
const interruptArb: fc.Arbitrary<Interrupt | undefined> = kept.length
	? fc.option(fc.oneof(...kept), { nil: undefined, freq: 2 })
	: fc.constant(undefined);

const edits = {
	resend: unless('resend', fc.boolean(), false),
	legacyClear: unless('legacyClear', fc.boolean(), false),
	credential: unless('perItem', fc.constantFrom<'fixed' | 'perItem'>('fixed', 'perItem'), 'fixed'),
	maxPerExecution: unless('caps', fc.constantFrom(0, 24, 36), 0),
};
const editArb: fc.Arbitrary<Edit> = fc.record(
	{ ...edits, onError: onErrorArb },
	{ requiredKeys: [] },
);

const newExecutionArb = fc
	.tuple(specArb, faultsArb, interruptArb, fc.boolean())
	.map(
		([spec, faults, interrupt, aim]) =>
			new NewExecution(timed(spec, faults), aim ? aimed(spec, faults) : faults, interrupt),
	);
const retryAfterKillArb = fc
	.tuple(
		fc.nat(9),
		fc.record({
			reorder: fc.boolean(),
			crashRecovered: fc.boolean(),
			repeatCall: fc.boolean(),
			edit: fc.option(editArb, { nil: undefined }),
			aim: fc.boolean(),
		}),
		faultsArb,
		interruptArb,
	)
	.map(
		([target, change, faults, interrupt]) => new RetryAfterKill(target, change, faults, interrupt),
	);
const retryExecutionArb = fc
	.tuple(fc.nat(9), fc.option(editArb, { nil: undefined }), faultsArb, interruptArb)
	.map(([target, edit, faults, interrupt]) => new RetryExecution(target, edit, faults, interrupt));

const maxCommands = Number(process.env.MODEL_COMMANDS ?? 5);
// A retry after a kill weighs twice: it is where most of the promises are kept or broken.
const randomCommands = (most: number) =>
	fc.commands(
		[
			newExecutionArb,
			...(without.has('retryAfterKill') ? [] : [retryAfterKillArb, retryAfterKillArb]),
			...(without.has('retryExecution') ? [] : [retryExecutionArb]),
			fc.constant(new Restart()),
		],
		{ maxCommands: most },
	);

/**
 * Story 1, the crash: a loop of rows through the node as it comes (Concurrency 1, n8n's On Error:
 * Stop Workflow) with Retry On Fail turned on; n8n killed during the execution; then Executions →
 * Retry, perhaps with the saved workflow edited, whose first row the service refuses once (a
 * refunded 500: what Retry On Fail is for). Where a retry's next try meets rows its first never
 * reached.
 */
const crashStory: fc.Arbitrary<Command[]> = fc
	.tuple(
		specArb,
		fc.constantFrom<2 | 3>(2, 3),
		faultsArb,
		fc.record({ kind: fc.constantFrom('kill' as const, 'killBefore' as const), at: storeCall }),
		fc.record({
			reorder: fc.boolean(),
			crashRecovered: fc.boolean(),
			repeatCall: fc.constant(false),
			edit: fc.option(fc.record(edits, { requiredKeys: [] }), { nil: undefined }),
		}),
		faultsArb,
		unless('caps', fc.constantFrom(0, 24, 36), 0),
	)
	.map(([spec, tries, faults, kill, change, retryFaults, maxPerExecution]) => [
		new NewExecution(
			timed(
				{ ...spec, asTool: false, concurrency: 1, onError: 'stop', tries, maxPerExecution },
				faults,
			),
			faults,
			kill,
		),
		new RetryAfterKill(0, { ...change, aim: true }, retryFaults),
	]);

/**
 * Story 2, a charge then its reuse: rows with a key (one product and one key under both accounts
 * half the time), the first row's answer lost after the charge (a reset, or a timeout), perhaps n8n
 * killed or the user's Stop as well; then the key or the ask used again: a new execution with the
 * same rows (Resend on or off), Executions → Retry of the killed or failed execution (Resend on or
 * off), or two retries of the failed execution with Resend, the first failing at another row.
 */
const reuseStory: fc.Arbitrary<Command[]> = fc
	.tuple(
		specArb,
		fc.constantFrom('k0', 'k1', 'p0'),
		fc.boolean(),
		fc.constantFrom<FaultKind | 'none'>('resetAfter', 'resetAfter', 'timeoutAfter', 'none'),
		fc.option(
			fc.oneof(
				// n8n killed at the next row's send, the key answered: its run never ended.
				fc.constant({
					kind: 'killAt' as const,
					route: 'generate' as const,
					skip: 1,
					when: 'after' as const,
				}),
				fc.record({ kind: fc.constantFrom('kill' as const, 'killBefore' as const), at: storeCall }),
				atRequest.map((at) => ({ kind: 'killAt' as const, ...at })),
				atRequest.map((at) => ({ kind: 'stopAt' as const, ...at })),
			),
			{ nil: undefined },
		),
		fc.array(
			fc.oneof(
				fc.boolean().map((resend) => ({ kind: 'new' as const, resend })),
				fc.boolean().map((resend) => ({ kind: 'retry' as const, resend })),
				fc.constant({ kind: 'twice' as const, resend: true }),
			),
			{ minLength: 1, maxLength: 2 },
		),
		fc.boolean(),
	)
	.map(([spec, product, twoAccounts, kind, interrupt, reuses, stop]) => {
		const twice = reuses.some((reuse) => reuse.kind === 'twice');
		const faults: Fault[] = kind === 'none' ? [] : [{ product, kind, skip: 0 }];
		const rows: Row[] = [
			...(twoAccounts
				? [
						{ product, account: 'A' as const },
						{ product, account: 'B' as const },
					]
				: [{ product, account: 'A' as const }]),
			// A row the first resend's retry fails at (a 402), so the same record is retried again.
			...(twice ? [{ product: 'p1', account: 'A' as const }] : []),
		];
		const first: RunSpec = timed(
			{
				...spec,
				asTool: false,
				runs: [rows, ...spec.runs.slice(1)],
				credential: twoAccounts ? 'perItem' : spec.credential,
				onError: stop ? 'stop' : spec.onError,
				maxPerItem: 0,
			},
			faults,
		);
		const commands: Command[] = [new NewExecution(first, faults, interrupt)];
		for (const reuse of reuses) {
			if (reuse.kind === 'new')
				commands.push(new NewExecution({ ...first, resend: reuse.resend }, []));
			else if (reuse.kind === 'twice') {
				// Two retries of one failed execution with Resend: the first fails at p1, the second resends nothing.
				commands.push(
					new RetryExecution(0, { resend: true }, [{ product: 'p1', kind: 'credits402', skip: 0 }]),
				);
				commands.push(new RetryExecution(0, { resend: true }, []));
			} else {
				commands.push(
					new RetryAfterKill(
						0,
						{
							reorder: false,
							crashRecovered: false,
							repeatCall: false,
							edit: { resend: reuse.resend },
						},
						[],
					),
				);
				commands.push(new RetryExecution(0, reuse.resend ? { resend: true } : undefined, []));
			}
		}
		return commands;
	});

/**
 * Story 3, the user's Stop: a loop with Download Images on (Concurrency 1: the downloads follow the
 * last generation), sometimes a cap, stopped at a download, at a send, or between items (at a store
 * call, while paid items wait for their downloads); then Executions → Retry of it (Resend on or off)
 * or the same rows as a new execution.
 */
const stopStory: fc.Arbitrary<Command[]> = fc
	.tuple(
		specArb,
		fc.oneof(
			atRequest.map((at): Interrupt => ({ kind: 'stopAt', ...at })),
			storeCall.map((at): Interrupt => ({ kind: 'stop', at })),
		),
		fc.boolean(),
		fc.boolean(),
		fc.constantFrom(0, 24, 36),
	)
	.map(([spec, stop, again, resend, maxPerExecution]) => {
		const first: RunSpec = {
			...spec,
			asTool: false,
			concurrency: 1,
			download: true,
			maxPerExecution,
		};
		return [
			new NewExecution(first, [], stop),
			again
				? new RetryExecution(0, resend ? { resend: true } : undefined, [])
				: new NewExecution({ ...first, resend }, []),
		];
	});

/**
 * Story 4, twin rows of one key: an unkeyed row first and the key twice, On Error: Continue, the
 * first send of each refused once (a refunded 500). Either at Concurrency 8 without Retry On Fail
 * (the twin meets its key's claim in flight, then its refusal), or at Concurrency 1 with Retry On
 * Fail (the first item an error item: n8n tries the node again and drops the first try's output),
 * n8n killed in the second try after its first charge; then the same rows anew, or Executions →
 * Retry of the kill.
 */
const twinStory: fc.Arbitrary<Command[]> = fc
	.tuple(
		specArb,
		fc.constantFrom('k0', 'k1'),
		fc.boolean(),
		fc.constantFrom<2 | 3>(2, 3),
		fc.boolean(),
	)
	.map(([spec, key, inFlight, tries, anew]) => {
		const rows: Row[] = [
			{ product: 'p0', account: 'A' },
			{ product: key, account: 'A' },
			{ product: key, account: 'A' },
		];
		const faults: Fault[] = [
			{ product: 'p0', kind: 'refund500', skip: 0 },
			{ product: key, kind: 'refund500', skip: 0 },
		];
		const first: RunSpec = {
			...spec,
			asTool: false,
			runs: [rows],
			concurrency: inFlight ? 8 : 1,
			tries: inFlight ? undefined : tries,
			onError: 'continue',
			credential: 'fixed',
			maxPerItem: 0,
		};
		// Past the refused sends (the faults take them), the twin's send is the hold's first and the
		// second try's first send its next: n8n killed once that one is charged.
		const kill = inFlight
			? undefined
			: ({ kind: 'killAt', route: 'generate', skip: 1, when: 'after' } as const);
		return [
			new NewExecution(first, faults, kill),
			kill && !anew
				? new RetryAfterKill(0, { reorder: false, crashRecovered: false, repeatCall: false }, [])
				: new NewExecution(first, []),
		];
	});

/**
 * Story 5, a new key of one account: one product on rows of both accounts, sent under account A's
 * second key (every row charged to A), the execution failed by a 402 on a later row; then
 * Executions → Retry with the credential per row (or A's first key): A's rows are proven under A's
 * first key and returned, B's rows are not A's (`other_key`), whichever row is proven first.
 */
const newKeyStory: fc.Arbitrary<Command[]> = fc
	.tuple(
		fc.constantFrom('p0', 'k0'),
		fc.boolean(),
		onErrorArb,
		fc.constantFrom<Credential>('perItem', 'perItem', 'fixed'),
	)
	.map(([product, bFirst, onError, credential]) => {
		const rows: Row[] = bFirst
			? [
					{ product, account: 'B' },
					{ product, account: 'A' },
				]
			: [
					{ product, account: 'A' },
					{ product, account: 'B' },
				];
		const first: RunSpec = {
			runs: [[...rows, { product: 'p1', account: 'A' }]],
			concurrency: 1,
			onError: 'stop',
			resend: false,
			credential: 'second',
			asTool: false,
		};
		return [
			new NewExecution(first, [{ product: 'p1', kind: 'credits402', skip: 0 }]),
			new RetryExecution(0, { credential, onError }, []),
		];
	});

const stories: Array<fc.WeightedArbitrary<Command[]>> = [
	...(without.has('perItem') ? [] : [{ weight: 1, arbitrary: newKeyStory }]),
	...(without.has('keys') || without.has('faults') ? [] : [{ weight: 1, arbitrary: twinStory }]),
	...(without.has('kill') || without.has('retryAfterKill')
		? []
		: [{ weight: 1, arbitrary: crashStory }]),
	...(without.has('keys') || without.has('faults') ? [] : [{ weight: 2, arbitrary: reuseStory }]),
	...(without.has('stop') || without.has('download') ? [] : [{ weight: 1, arbitrary: stopStory }]),
];

export const commandsArb: fc.Arbitrary<Iterable<Command>> =
	stories.length && maxCommands >= 3
		? fc.oneof(
				{ weight: 3, arbitrary: randomCommands(maxCommands) },
				{
					weight: 4,
					arbitrary: fc
						.tuple(fc.oneof(...stories), randomCommands(Math.max(0, maxCommands - 3)))
						.map(([opening, rest]) => [...opening, ...rest]),
				},
			)
		: randomCommands(maxCommands);

export const capsArb = without.has('scaled')
	? fc.constant<'real' | 'scaled'>('real')
	: fc.constantFrom<'real' | 'scaled'>('real', 'real', 'scaled');

/**
 * One history: a fresh world, then the commands, each followed by the model's check. A broken
 * promise fails with the commands that ran, written as a test that replays them.
 */
export async function runHistory(
	emulator: Emulator,
	caps: 'real' | 'scaled',
	commands: Iterable<Command>,
): Promise<void> {
	const system = new System(emulator, caps);
	await system.start();
	const model: Model = { killed: [], failed: [], specs: new Map(), families: new Map() };
	const ran: Command[] = [];
	const logged = [...commands].map((command) => ({
		check: (m: Readonly<Model>) => command.check(m),
		run: async (m: Model, r: System) => {
			ran.push(command);
			if (process.env.MODEL_VERBOSE)
				console.log(`${new Date().toISOString()} ${command.toString()}`);
			await command.run(m, r);
		},
		toString: () => command.toString(),
	}));
	try {
		await fc.asyncModelRun(() => ({ model, real: system }), logged);
	} catch (error) {
		const replay = ran.map((command) => `\t${command.toString()},`).join('\n');
		(error as Error).message +=
			`\n\nReplay:\n\tawait runHistory(emulator, '${caps}', [\n${replay.replace(/^\t/gm, '\t\t')}\n\t]);`;
		throw error;
	}
}
