/**
 * How n8n 2.41.1 drives a polling trigger and persists its static data, modelled on n8n's own code
 * (paths under node_modules/n8n/dist of the pinned install, and n8n-core 2.41.1):
 *
 * Legacy path (the default: N8N_POLLER_DURABLE_CURSORS_ENABLED is off):
 *  - Activation builds one long-lived `Workflow` from the stored static data
 *    (active-workflow-manager.js, `new Workflow({ staticData: dbWorkflow.staticData })`), runs the
 *    activation poll once as a "testing" poll (active-workflow-triggers.js `executePollTrigger(true)`):
 *    items are emitted, `null` commits nothing, a throw fails the activation. Afterwards
 *    `saveStaticData(workflow)` runs (active-workflow-manager.js, end of `add`), so the activation
 *    poll's state is stored even when it returned null.
 *  - A timed poll that returns items calls `__emit`, which calls `saveStaticData(workflow)` before the
 *    workflow runs (trigger-execution-context.factory.js, `__emit`). A poll returning null calls
 *    `__commitCursor`, which commits nothing on this path (`takeStagedCursor` is null when not
 *    migrated): its changes stay in memory. A throw becomes an error execution (`__emitError`).
 *  - `saveStaticData` writes only when `workflow.staticData.__dataChanged` is true
 *    (workflow-static-data.service.js); the flag is set by the ObservableObject proxy when a
 *    top-level key of the node's bucket is assigned or deleted (n8n-workflow observable-object.js).
 *  - Polls are not serialized (triggers-and-pollers.js counts overlaps for telemetry only).
 *  - A restart or a workflow update builds a new `Workflow` from what was stored.
 *
 * Durable path (N8N_POLLER_DURABLE_CURSORS_ENABLED with the scheduler): every poll gets a fresh
 * `Workflow` and a deep copy of the stored cursor as its node static data (`resolveNodeStaticData`),
 * committed with the execution on emit, or alone after a null poll when it changed (deep compare);
 * the activation poll commits nothing when it returns null. Polls are fenced by a lease (modelled:
 * one at a time).
 */
import type { IDataObject, INodeExecutionData, INodeParameters, INodeType } from 'n8n-workflow';

import { PollingWorkflow, type HarnessCredentials } from './n8n';

export interface PollerHostOptions {
	nodeType: INodeType;
	parameters: INodeParameters;
	credentials: HarnessCredentials;
	nodeName?: string;
	getPollBudgetMs?: () => number;
	/** Static data as stored in the database (JSON), e.g. from an earlier host. */
	stored?: string;
}

export type PollOutcome =
	| { kind: 'emitted'; items: INodeExecutionData[] }
	| { kind: 'null' }
	| { kind: 'error'; error: Error };

let processes = 0;
/**
 * A fresh n8n process, as far as the trigger's poll turns can tell: they live in the process and are
 * keyed by the workflow's id, so polls under a new id find none of an earlier process's turns.
 */
const newProcess = () => `workflow-of-process-${++processes}`;

function isChanged(staticData: IDataObject): boolean {
	return (staticData as { __dataChanged?: boolean }).__dataChanged === true;
}

/** n8n's legacy poll path: one long-lived workflow, static data saved on emit and at activation. */
export class LegacyPollerHost {
	/** What the database holds (JSON of the workflow's static data). */
	stored: string;

	/** Every execution started, in order, each with the items of its trigger output. */
	readonly executions: INodeExecutionData[][] = [];

	readonly errors: Error[] = [];

	private live?: PollingWorkflow;

	/** A new host is a freshly started n8n process: nothing of earlier polls is in memory. */
	private process = newProcess();

	constructor(private options: PollerHostOptions) {
		this.stored = options.stored ?? '{}';
	}

	get active(): boolean {
		return this.live !== undefined;
	}

	/** The live workflow's static data (what n8n keeps in memory). */
	memory(): IDataObject {
		if (!this.live) throw new Error('not active');
		return this.live.workflow.staticData;
	}

	private saveStaticData(): void {
		const workflow = this.live?.workflow;
		if (workflow && isChanged(workflow.staticData)) {
			this.stored = JSON.stringify(workflow.staticData);
			(workflow.staticData as { __dataChanged?: boolean }).__dataChanged = false;
		}
	}

	private emit(items: INodeExecutionData[][]): void {
		this.saveStaticData();
		this.executions.push(items[0] ?? []);
	}

	/** Activates (or re-activates after a restart/update) from the stored static data. */
	async activate(): Promise<PollOutcome> {
		const live = new PollingWorkflow({
			nodeType: this.options.nodeType,
			parameters: this.options.parameters,
			credentials: this.options.credentials,
			nodeName: this.options.nodeName,
			workflowId: this.process,
			getPollBudgetMs: this.options.getPollBudgetMs,
			staticData: JSON.parse(this.stored) as IDataObject,
			mode: 'trigger',
			activation: 'activate',
		});
		this.live = live;
		const result = await live.poll('trigger').catch((error: unknown) => {
			this.live = undefined; // activation failed: nothing saved, the error fails the activation
			return Promise.reject(error);
		});
		let outcome: PollOutcome = { kind: 'null' };
		if (result !== null) {
			this.emit(result);
			outcome = { kind: 'emitted', items: result[0] ?? [] };
		}
		this.saveStaticData();
		return outcome;
	}

	/** One timed poll of the active workflow. */
	async tick(): Promise<PollOutcome> {
		const live = this.live;
		if (!live) throw new Error('not active');
		try {
			const result = await live.poll('trigger');
			if (this.live !== live) return { kind: 'null' }; // superseded while running: discarded
			if (result === null) return { kind: 'null' };
			this.emit(result);
			return { kind: 'emitted', items: result[0] ?? [] };
		} catch (error) {
			this.errors.push(error as Error);
			return { kind: 'error', error: error as Error };
		}
	}

	/**
	 * What n8n 2.41 does to a running poll when another poll of the workflow ends first: it releases
	 * the workflow's expression engine, and every later expression evaluation of the running poll (the
	 * credential's auth header, for one) throws n8n's IsolateError. The harness runs n8n's expressions
	 * without the isolate engine, so the evaluation that fails is stood in for here.
	 */
	releaseExpressionEngine(): void {
		const expression = this.live?.workflow.expression;
		if (!expression) throw new Error('not active');
		expression.getSimpleParameterValue = () => {
			const error = new Error('No bridge acquired for this context. Call acquire() first.');
			error.name = 'IsolateError';
			throw error;
		};
	}

	/** The user edits the credential (another key, another account's key …): read at the next poll. */
	useCredentials(credentials: HarnessCredentials): void {
		this.options = { ...this.options, credentials };
		this.live?.useCredentials(credentials);
	}

	/** n8n stops (the in-memory state is gone) and starts again from the database. */
	async restart(): Promise<PollOutcome> {
		this.live = undefined;
		this.process = newProcess();
		return await this.activate();
	}

	/** The user edits the node and saves: the workflow is re-activated from the stored data. */
	async update(parameters: INodeParameters, nodeName?: string): Promise<PollOutcome> {
		this.options = { ...this.options, parameters, nodeName: nodeName ?? this.options.nodeName };
		this.live = undefined;
		return await this.activate();
	}

	/**
	 * "Fetch Test Event": a manual run in the editor. Static data is neither loaded nor saved; the
	 * node gets a copy here so a test can check it was not touched.
	 */
	async fetchTestEvent(
		parameters?: INodeParameters,
	): Promise<{ result: INodeExecutionData[][] | null; staticData: IDataObject }> {
		const staticData = JSON.parse(this.stored) as IDataObject;
		const manual = new PollingWorkflow({
			nodeType: this.options.nodeType,
			parameters: parameters ?? this.options.parameters,
			credentials: this.options.credentials,
			nodeName: this.options.nodeName,
			staticData,
			mode: 'manual',
		});
		const result = await manual.poll('manual');
		return {
			result,
			staticData: JSON.parse(JSON.stringify(manual.workflow.staticData)) as IDataObject,
		};
	}
}

/**
 * n8n 2.41's durable-cursor path: a staged copy per poll, committed on emit or when it changed. The
 * commit of an emitted poll lands after the poll returned (n8n loads the workflow, then commits the
 * cursor with the execution), here after `commitDelay()`. A restart is a new process: what the old
 * one still had running never commits.
 */
export class DurablePollerHost {
	/** The stored cursor of the node (JSON), i.e. poller_state. */
	stored: string;

	readonly executions: INodeExecutionData[][] = [];

	readonly errors: Error[] = [];

	/** Resolves when an emitted poll's execution and cursor are committed (default: at once). */
	commitDelay: () => Promise<void> = async () => {};

	private generation = 0;

	private readonly commits: Array<Promise<void>> = [];

	private process = newProcess();

	constructor(private options: PollerHostOptions) {
		this.stored = options.stored ?? '{}';
	}

	/** The user edits the credential: polls from now on read it. */
	useCredentials(credentials: HarnessCredentials): void {
		this.options = { ...this.options, credentials };
	}

	private async run(testing: boolean): Promise<PollOutcome> {
		const generation = this.generation;
		const seed = this.stored;
		const snapshot = JSON.parse(seed) as IDataObject;
		const workflow = new PollingWorkflow({
			nodeType: this.options.nodeType,
			parameters: this.options.parameters,
			credentials: this.options.credentials,
			nodeName: this.options.nodeName,
			workflowId: this.process,
			getPollBudgetMs: this.options.getPollBudgetMs,
			staticData: {},
			mode: 'trigger',
			activation: testing ? 'activate' : 'update',
			resolveNodeStaticData: () => snapshot,
		});
		const changed = () => JSON.stringify(snapshot) !== seed;
		const attempt = workflow.poll('trigger');
		// An activation poll's error fails the activation; a timed poll's becomes an error execution.
		const result = testing ? await attempt : await attempt.catch((error: Error) => error);
		if (generation !== this.generation) return { kind: 'null' }; // its process is gone: nothing commits
		if (result instanceof Error) {
			this.errors.push(result);
			return { kind: 'error', error: result };
		}
		if (result !== null) {
			const cursor = changed() ? JSON.stringify(snapshot) : undefined;
			const commit = this.commitDelay().then(() => {
				if (generation !== this.generation) return;
				if (cursor !== undefined) this.stored = cursor;
				this.executions.push(result[0] ?? []);
			});
			this.commits.push(commit);
			return { kind: 'emitted', items: result[0] ?? [] };
		}
		if (!testing && changed()) this.stored = JSON.stringify(snapshot);
		return { kind: 'null' };
	}

	async activate(): Promise<PollOutcome> {
		return await this.run(true);
	}

	async tick(): Promise<PollOutcome> {
		return await this.run(false);
	}

	/** Waits until every emitted poll's commit has landed. */
	async settle(): Promise<void> {
		await Promise.all(this.commits);
	}

	/** n8n stops and starts again: polls still running in the old process never commit. */
	restart(): void {
		this.generation++;
		this.process = newProcess();
	}
}

/** A small seeded PRNG (mulberry32) for reproducible randomized tests. */
export function mulberry32(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
