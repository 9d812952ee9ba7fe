/**
 * One item's Generate parameters, read and checked before anything is sent: every bad value fails
 * naming the parameter, the item and the allowed values. The bounds are the table the editor's
 * min/max come from (BOUNDS).
 */
import type { IExecuteFunctions } from 'n8n-workflow';

import { AUTO_MODEL, DEFAULT_RATIO } from '../../../shared/catalog';
import { asNodeError } from '../../../shared/execution';
import {
	BOUNDS,
	type NumberBounds,
	type ValidatedGenerate,
	ValidationIssue,
	numberOption,
	validateGenerate,
} from '../../../shared/validate';

export interface GenerateOptions {
	acceptLanguage: string;
	/** As a tool: answer within this many seconds (-1 = unset: 45 under MCP, none under an agent). */
	answerWithinSeconds: number;
	concurrency: number;
	/** Unset stays unset: the default depends on whether the node runs as an agent's tool. */
	downloadImages?: boolean;
	/** Unset stays unset: as an agent's tool the links are added unless turned off. */
	imageLinks?: boolean;
	maxCreditsPerExecution: number;
	maxCreditsPerHour: number;
	maxFileBytes: number;
	/** As a tool: the handle of a held generation to collect ('' = none). */
	handle: string;
	/** On a retried execution, send again items whose earlier request may have been charged. */
	resendUncertain: boolean;
	splitImages: boolean;
	timeoutMs: number;
}

/** What one item asks for: the API body with its estimate, and how to run it. */
export interface ItemPlan {
	request: ValidatedGenerate;
	options: GenerateOptions;
}

const LANGUAGES = ['en', 'zh-CN'];
/** The options of held generations (held.ts); the editor's min/max repeat them. */
const ANSWER_WITHIN = { min: 0, max: 600, whole: false, fallback: -1 };
const PER_HOUR = { min: 0, max: 1_000_000, whole: false, fallback: 0 };

function checkedOptions(raw: Record<string, unknown>): GenerateOptions {
	const language = String(raw.acceptLanguage ?? 'en');
	if (!LANGUAGES.includes(language)) {
		throw new ValidationIssue(
			'acceptLanguage',
			`Accept Language "${language}" is not allowed. Allowed values: ${LANGUAGES.join(', ')}`,
		);
	}
	const number = (name: keyof typeof BOUNDS | string, label: string, bounds?: NumberBounds) =>
		numberOption(name, label, raw[name], bounds ?? BOUNDS[name as keyof typeof BOUNDS]);
	return {
		acceptLanguage: language,
		answerWithinSeconds: number('answerWithinSeconds', 'Answer Within (Seconds)', ANSWER_WITHIN),
		concurrency: number('concurrency', 'Concurrency'),
		downloadImages: raw.downloadImages === undefined ? undefined : Boolean(raw.downloadImages),
		imageLinks: raw.imageLinks === undefined ? undefined : Boolean(raw.imageLinks),
		maxCreditsPerExecution: number('maxCreditsPerExecution', 'Max Credits per Execution'),
		maxCreditsPerHour: number('maxCreditsPerHour', 'Max Credits per Hour', PER_HOUR),
		handle: String(raw.handle ?? '').trim(),
		maxFileBytes: Math.floor(number('maxFileSizeMb', 'Max File Size (MB)') * 1024 * 1024),
		resendUncertain: raw.resendUncertain === true,
		splitImages: Boolean(raw.splitImages),
		timeoutMs: number('timeoutSeconds', 'Timeout (Seconds)') * 1000,
	};
}

/** Reads and checks item `itemIndex`; Max Credits per Item is checked with the request. */
export function planItem(ctx: IExecuteFunctions, itemIndex: number): ItemPlan {
	try {
		const raw = ctx.getNodeParameter('options', itemIndex, {});
		const rawOptions = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<
			string,
			unknown
		>;
		const options = checkedOptions(rawOptions);
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
			maxCreditsPerItem: rawOptions.maxCreditsPerItem,
		});
		return { request, options };
	} catch (error) {
		throw asNodeError(ctx, error, itemIndex);
	}
}
