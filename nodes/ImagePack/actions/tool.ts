/**
 * The node as an AI agent's tool. n8n runs a `usableAsTool` node as the synthetic type
 * `<package>.imagePackTool`: AI Agent 2.x calls `execute()` inside its LangChain executor (a
 * SupplyDataContext, `isToolExecution()` true), AI Agent 3.x as a step of the workflow (an ordinary
 * ExecuteContext whose input item carries `toolCallId`). The model receives the JSON of the output
 * items only, and an error thrown by the tool reaches it as an empty string (2.x) or as its bare
 * message (3.x). So under an AI Agent the node does not throw: a failure becomes one item whose
 * `error` text says what failed, the code, what was charged, the request id and what to change
 * (router.ts). It throws in two cases: under n8n's MCP Server Trigger (`runsUnderMcp`), where only a
 * thrown error reaches the client flagged as an error, router.ts throws that same text as the
 * error's message; and a saved workflow naming an operation the node does not have fails before any
 * tool handling.
 *
 * Also: how a run tells it is a tool call, and where the execution's context data is read.
 */
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import {
	DEFAULT_QUALITY,
	IMAGE_COUNTS,
	MODELS,
	type ModelSpec,
	QUALITIES,
	RATIOS,
} from '../shared/catalog';
import { rule } from '../shared/codes';
import { type ChargeOutcome, type ErrorFacts, errorFacts, factFields } from '../shared/errors';
import { type OperationName, operationOf } from './operations';

/** Whether AI Agent 2.x runs this call in its own context (a SupplyDataContext). */
export function isToolExecution(ctx: IExecuteFunctions): boolean {
	const toolExecution = (ctx as { isToolExecution?: () => boolean }).isToolExecution;
	return typeof toolExecution === 'function' && toolExecution.call(ctx);
}

/** Whether this run of the node is an AI agent's tool call (AI Agent 2.x and 3.x, n8n 1.x and 2.x). */
export function runsAsTool(ctx: IExecuteFunctions): boolean {
	return isToolExecution(ctx) || ctx.getNode().type.endsWith('Tool');
}

/** The execution's context data; a context without execution data (none seen in n8n) gets its own. */
export function contextData(ctx: IExecuteFunctions, type: 'flow' | 'node'): IDataObject {
	try {
		return ctx.getContext(type) as IDataObject;
	} catch {
		return {};
	}
}

/** Whether this tool call comes from n8n's MCP Server Trigger (its context's `parentNode`, both modes). */
export function runsUnderMcp(ctx: IExecuteFunctions): boolean {
	const parent = (ctx as { parentNode?: { type?: string } }).parentNode;
	return parent?.type === '@n8n/n8n-nodes-langchain.mcpTrigger';
}

// What the model is told about each operation (the tool description), derived from the catalog.

const join = (values: readonly (string | number)[]) => values.join(', ');

/** "12/16/23 at 1K/2K/4K (default 2K)" or "5/15/50 at low/medium/high quality +1 per reference". */
function compactPrice(model: ModelSpec): string {
	if (model.price.by === 'quality') {
		const credits = model.price.credits;
		return `${QUALITIES.map((quality) => credits[quality]).join('/')} at ${QUALITIES.join('/')} quality (default ${DEFAULT_QUALITY}) +${model.price.perReference} per reference`;
	}
	const credits = model.price.credits;
	return `${model.resolutions.map((resolution) => credits[resolution]).join('/')} at ${model.resolutions.join('/')} (default ${model.defaultResolution})`;
}

/** Models with the same ratios, resolutions, limit and price are listed once ("gpt-image-2, gpt-image-2.5"). */
function modelLines(): string[] {
	const groups = new Map<string, ModelSpec[]>();
	for (const model of MODELS) {
		const key = JSON.stringify([
			model.price,
			model.ratios,
			model.resolutions,
			model.referenceLimit,
		]);
		groups.set(key, [...(groups.get(key) ?? []), model]);
	}
	return [...groups.values()].map((models) => {
		const [model] = models;
		const missing = RATIOS.filter((ratio) => !model.ratios.includes(ratio));
		const ratios = missing.length ? `, no ${join(missing)}` : '';
		return `${models.map((m) => m.id).join(', ')} ${compactPrice(model)}, up to ${model.referenceLimit} references${ratios}`;
	});
}

const FAILURE =
	'A failure returns {"error": what failed, the code, the charge, the request id, what to change}.';

/**
 * The default tool description of each operation: what it does, what it costs, what it returns and
 * how to chain. Kept under 1024 characters, the smallest limit model APIs put on a tool description.
 */
export const TOOL_DESCRIPTIONS: Record<OperationName, string> = {
	generate: [
		'Generates e-commerce product images from a prompt and/or earlier images.',
		'Returns JSON: images[] (id), image_links[] (url, expires_at), session_id, credits_charged, warnings[] (differences from the request), request_id.',
		'Show the user each image as Markdown ![description](its image_links url), never images[].url; links expire in an hour.',
		'To refine earlier images pass their images[].id as reference image ids and their session_id.',
		`Credits per image: ${modelLines().join('; ')}; auto picks one.`,
		`Ratios ${join(RATIOS)}; ${join(IMAGE_COUNTS)} images.`,
		'Calls over the credit cap are refused.',
		FAILURE,
	].join(' '),
	get: [
		'Reads one published image pack by its numeric publication id (free).',
		'Returns the record (id, pack_id, version, style_code, published_at), its manifest as published and "normalized": the seller\'s text notes and images (imageId, download_url; null when the seller deleted it).',
		'List publication ids with the get-many operation.',
		FAILURE,
	].join(' '),
	getMany: [
		'Lists published image pack records in ascending id order, those with an id above the since id (free).',
		'Returns per record: id, pack_id, version, style_code, source_revision, published_at. Read one with its images and notes with the get operation.',
		FAILURE,
	].join(' '),
	download: [
		'Downloads a generated or published image (an images[].url or download_url path, or a file name) into the workflow for later steps (free).',
		'Returns filename, mimeType and fileSize; the file itself is not shown to you.',
		FAILURE,
	].join(' '),
};

// Errors as text a model can act on.

/** Each charge outcome in words for a model. */
const CHARGE_WORDS: Record<ChargeOutcome, string> = {
	not_sent: 'Nothing was sent and no credits were used.',
	not_charged: 'The service refused or refunded the request: no credits were charged.',
	may_have_been_charged:
		'The generation may have run and may have been charged: do not call again automatically.',
};

/** What failed (`errorFacts`: the reason, without the item and free of the key) and in which operation. */
export type ToolErrorInput = ErrorFacts & { reason: string; operation: string };

/** One English paragraph: what failed, the code, what was charged, the request id, what to do. */
export function toolErrorText(input: ToolErrorInput): string {
	const operation = operationOf(input.operation);
	const what = (operation?.failing ?? 'The Image Pack call') + ' failed';
	const reason = input.reason.replace(/\.?\s*$/, '.');
	const code = input.code ?? 'unknown';
	const status = input.httpStatus ? `, HTTP ${input.httpStatus}` : '';
	const parts = [`${what}: ${reason}`, `Error code: ${code}${status}.`];
	if (operation?.paid) parts.push(CHARGE_WORDS[input.charge]);
	else parts.push('This operation never costs credits.');
	if (input.requestId) parts.push(`Request id: ${input.requestId}.`);
	if (input.apiMessage) {
		parts.push(`The service’s message: ${input.apiMessage.trim().replace(/[^.。!?！？]$/, '$&.')}`);
	}
	const { next } = rule(input.code);
	if (next) parts.push(next);
	return parts.join(' ');
}

/** The output item of a failed tool call: the text first, then the same facts as fields. */
export function toolErrorItem(
	error: unknown,
	itemIndex: number,
	operation: string,
): INodeExecutionData {
	const facts = errorFacts(error);
	const { code, httpStatus, requestId, charge } = factFields(facts);
	const json: IDataObject = { error: toolErrorText({ operation, ...facts }), code, httpStatus };
	if (requestId) json.requestId = requestId;
	if (operationOf(operation)?.paid) json.charged = charge;
	return { json, pairedItem: { item: itemIndex } };
}
