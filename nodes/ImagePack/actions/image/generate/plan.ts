/**
 * One item's Generate parameters, read and checked before anything is sent: every bad value fails
 * naming the parameter, the item and the allowed values. A number option's default and bounds are
 * read from its definition in the editor (description.ts).
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import type { Connection } from '../../../transport';

import { AUTO_MODEL, DEFAULT_RATIO } from '../../../shared/catalog';
import { ValidationIssue, boundedNumber } from '../../../shared/parameters';
import { itemParameters } from '../../items';
import { runsUnderMcp } from '../../tool';
import { generateOptions } from './description';
import { type ValidatedGenerate, validateGenerate } from './request';

/** One item of a node run: its context and connection, whether it is a tool call, the item's plan. */
export interface ItemRun {
	ctx: IExecuteFunctions;
	connection: Connection;
	asTool: boolean;
	itemIndex: number;
	plan: ItemPlan;
}

/** What one item asks for: the API body with its estimate, and how to run it. */
export interface ItemPlan {
	request: ValidatedGenerate;
	options: ReturnType<typeof checkedOptions>;
}

const LANGUAGES = ['en', 'zh-CN'];

/** The longest Idempotency Key: a product id with a date fits many times over. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 500;

/** The user's Idempotency Key: text (a number is taken as written); '' when unset. */
function idempotencyKeyOf(value: unknown): string {
	if (value === undefined || value === null) return '';
	if (typeof value !== 'string' && typeof value !== 'number') {
		throw new ValidationIssue(
			'idempotencyKey',
			`Idempotency Key must be text, such as {{ $json.sku }}-{{ $today.toISODate() }} (got ${Array.isArray(value) ? 'a list' : typeof value})`,
		);
	}
	const key = String(value).trim();
	if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
		throw new ValidationIssue(
			'idempotencyKey',
			`Idempotency Key is ${key.length} characters long; at most ${MAX_IDEMPOTENCY_KEY_LENGTH} are allowed`,
		);
	}
	return key;
}

function checkedOptions(raw: Record<string, unknown>, underMcp: boolean) {
	const language = String(raw.acceptLanguage ?? 'en');
	if (!LANGUAGES.includes(language)) {
		throw new ValidationIssue(
			'acceptLanguage',
			`Accept Language "${language}" is not allowed. Allowed values: ${LANGUAGES.join(', ')}`,
		);
	}
	const number = (name: string) =>
		boundedNumber(generateOptions.find((option) => option.name === name)!, raw[name]);
	// As a tool (held.ts): answer within this bound (0: none), or hold nothing (an AI Agent's default:
	// it waits as before). Under MCP the generation is always held, so n8n's tool retry never re-sends.
	const answerWithin =
		raw.answerWithinSeconds === undefined
			? underMcp
				? 45
				: undefined
			: number('answerWithinSeconds');
	return {
		acceptLanguage: language,
		answerWithinMs: answerWithin === undefined ? undefined : answerWithin * 1000 || Infinity,
		concurrency: number('concurrency'),
		// Unset stays unset: the defaults of these two depend on whether the node runs as a tool.
		downloadImages: raw.downloadImages === undefined ? undefined : Boolean(raw.downloadImages),
		imageLinks: raw.imageLinks === undefined ? undefined : Boolean(raw.imageLinks),
		maxCreditsPerExecution: number('maxCreditsPerExecution'),
		maxCreditsPerItem: number('maxCreditsPerItem'), // checked here, with the request (request.ts)
		maxCreditsPerHour: number('maxCreditsPerHour'),
		handle: String(raw.handle ?? '').trim(), // as a tool: a held generation to collect
		idempotencyKey: idempotencyKeyOf(raw.idempotencyKey),
		maxFileBytes: Math.floor(number('maxFileSizeMb') * 1024 * 1024),
		outputFields: raw.outputFields === 'listing' ? ('listing' as const) : ('all' as const),
		resendUncertain: raw.resendUncertain === true,
		splitImages: Boolean(raw.splitImages),
		timeoutMs: number('timeoutSeconds') * 1000,
	};
}

/** Reads and checks item `itemIndex`: its options first, then the request. */
export function planItem(ctx: IExecuteFunctions, itemIndex: number): ItemPlan {
	return itemParameters(ctx, itemIndex, () => {
		const raw = ctx.getNodeParameter('options', itemIndex, {});
		const options = checkedOptions((typeof raw === 'object' && raw) || {}, runsUnderMcp(ctx));
		const parameter = (name: string, fallback: unknown) =>
			ctx.getNodeParameter(name, itemIndex, fallback) as never;
		const request = validateGenerate({
			prompt: parameter('prompt', ''),
			referenceImageIds: parameter('referenceImageIds', ''),
			model: parameter('model', AUTO_MODEL),
			ratio: parameter('ratio', DEFAULT_RATIO),
			resolution: parameter('resolution', ''),
			quality: parameter('quality', ''),
			n: parameter('n', 1),
			purpose: parameter('purpose', 'free'),
			sessionId: parameter('sessionId', ''),
			maxCreditsPerItem: options.maxCreditsPerItem,
		});
		return { request, options };
	});
}
