import type {
	IBinaryData,
	IDataObject,
	IExecuteFunctions,
	INodeExecutionData,
	INodeProperties,
} from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import {
	AUTO_MODEL,
	DEFAULT_QUALITY,
	DEFAULT_RATIO,
	IMAGE_COUNTS,
	MAX_PROMPT_LENGTH,
	MODELS,
	PURPOSE_LABELS,
	PURPOSES,
	QUALITIES,
	describePrice,
} from '../../shared/catalog';
import {
	asNodeError,
	errorItem,
	mapWithConcurrency,
	maxFileSizeOption,
	throwIfStopped,
} from '../../shared/execution';
import {
	type ApiResponse,
	type Connection,
	GENERATE_TIMEOUT_MS,
	apiRequest,
	downloadBinary,
	getConnection,
} from '../../shared/transport';
import {
	BOUNDS,
	type ValidatedGenerate,
	ValidationIssue,
	numberOption,
	validateGenerate,
} from '../../shared/validate';
import { CreditCapReached, ExecutionLedger, creditBudget, runsAsTool } from '../../shared/tool';

const show = { resource: ['image'], operation: ['generate'] };
const GPT_MODELS = MODELS.filter((model) => model.usesQuality).map((model) => model.id);
const MAX_CONCURRENCY = 8;

export const description: INodeProperties[] = [
	{
		displayName: 'Prompt',
		name: 'prompt',
		type: 'string',
		typeOptions: { rows: 4 },
		default: '',
		placeholder: 'A white sneaker on a marble pedestal, soft studio light',
		description: `What to generate, up to ${MAX_PROMPT_LENGTH} characters. Optional when reference images are given. Ask for text (brand name, slogan, price) and Auto picks GPT Image 2.`,
		displayOptions: { show },
	},
	{
		displayName: 'Model',
		name: 'model',
		type: 'options',
		default: AUTO_MODEL,
		description:
			'Image model. Auto picks one per request and does not report which; pick a model to know it.',
		options: [
			{
				name: 'Auto',
				value: AUTO_MODEL,
				description:
					'Nano Banana 2 by default, GPT Image 2 for text in the image, another model when there are too many references',
			},
			...MODELS.map((model) => ({
				name:
					model.status === 'Stable' ? model.displayName : `${model.displayName} (${model.status})`,
				value: model.id,
				description: describePrice(model),
			})),
		],
		displayOptions: { show },
	},
	// One notice per model, generated from the catalog: what it accepts and what it costs.
	...MODELS.map(
		(model): INodeProperties => ({
			displayName: `${model.displayName}: ratios ${model.ratios.join(', ')}; resolutions ${model.resolutions.join(', ')} (default ${model.defaultResolution}); up to ${model.referenceLimit} reference images; ${describePrice(model)}.`,
			name: `notice_${model.id.replace(/[^a-z0-9]/gi, '_')}`,
			type: 'notice',
			default: '',
			displayOptions: { show: { ...show, model: [model.id] } },
		}),
	),
	{
		displayName: 'Ratio Name or ID',
		name: 'ratio',
		type: 'options',
		typeOptions: { loadOptionsMethod: 'getRatios', loadOptionsDependsOn: ['model'] },
		default: DEFAULT_RATIO,
		description:
			'Aspect ratio of the images; only the ratios the chosen model supports are listed. Choose from the list, or specify an ID using an <a href="https://docs.n8n.io/code/expressions/">expression</a>.',
		displayOptions: { show },
	},
	{
		displayName: 'Resolution Name or ID',
		name: 'resolution',
		type: 'options',
		typeOptions: { loadOptionsMethod: 'getResolutions', loadOptionsDependsOn: ['model'] },
		default: '',
		description:
			'Resolution of the images; empty uses the model’s default. Choose from the list, or specify an ID using an <a href="https://docs.n8n.io/code/expressions/">expression</a>.',
		displayOptions: { show },
	},
	{
		displayName: 'Quality',
		name: 'quality',
		type: 'options',
		default: DEFAULT_QUALITY,
		description: 'Only GPT models use quality, and it sets their price',
		options: QUALITIES.map((quality) => ({
			name: quality.charAt(0).toUpperCase() + quality.slice(1),
			value: quality,
		})),
		displayOptions: { show: { ...show, model: GPT_MODELS } },
	},
	{
		displayName: 'Number of Images',
		name: 'n',
		type: 'options',
		default: 1,
		description: 'How many images to generate; credits are charged per delivered image',
		options: IMAGE_COUNTS.map((count) => ({ name: String(count), value: count })),
		displayOptions: { show },
	},
	{
		displayName: 'Purpose',
		name: 'purpose',
		type: 'options',
		default: 'free',
		description: 'Which set of e-commerce photography rules is added to the prompt',
		options: PURPOSES.map((purpose) => ({ value: purpose, ...PURPOSE_LABELS[purpose] })),
		displayOptions: { show },
	},
	{
		displayName: 'Reference Image IDs',
		name: 'referenceImageIds',
		type: 'string',
		default: '',
		placeholder: 'img_123, img_456',
		description:
			'Images to start from: image IDs (img_…) of an earlier Generate, separated by commas or spaces, or an expression returning a list. To refine the images of a previous Generate node, map its "images" field here.',
		displayOptions: { show },
	},
	{
		displayName: 'Session ID',
		name: 'sessionId',
		type: 'string',
		default: '',
		placeholder: 's_123',
		description:
			'Continue an existing session: map the session_id of an earlier Generate. Empty starts a new session.',
		displayOptions: { show },
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		displayOptions: { show },
		options: [
			{
				displayName: 'Accept Language',
				name: 'acceptLanguage',
				type: 'options',
				default: 'en',
				description: 'Language of the warning texts the service returns',
				options: [
					{ name: 'English', value: 'en' },
					{ name: 'Chinese', value: 'zh-CN' },
				],
			},
			{
				displayName: 'Concurrency',
				name: 'concurrency',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: MAX_CONCURRENCY },
				default: 1,
				description:
					'How many items are generated at the same time. Output order always follows input order.',
			},
			{
				displayName: 'Download Images',
				name: 'downloadImages',
				type: 'boolean',
				default: true,
				description:
					'Whether to attach the generated images as binary data (image_0, image_1, …). When the node runs as an AI agent’s tool, images are not downloaded unless this option is added and on: the agent only sees the JSON.',
			},
			{
				displayName: 'Max Credits per Execution',
				name: 'maxCreditsPerExecution',
				type: 'number',
				typeOptions: { minValue: 0 },
				default: 0,
				description:
					'Refuse a generation once the credits this workflow run has spent on Image Pack generations (all Image Pack nodes and every agent tool call of the run), plus this request’s estimate, would pass this (0 = no limit). Guards the wallet when an AI agent calls this tool in a loop; a refused call tells the agent why.',
			},
			{
				displayName: 'Max Credits per Item',
				name: 'maxCreditsPerItem',
				type: 'number',
				typeOptions: { minValue: 0 },
				default: 0,
				description:
					'Refuse to send an item whose estimated credits exceed this (0 = no limit). For Auto the estimate is the highest price Auto may pick.',
			},
			{
				...maxFileSizeOption,
				description:
					'A downloaded image larger than this is stopped and reported in download_errors (the generation stays in the output)',
			},
			{
				displayName: 'One Item per Image',
				name: 'splitImages',
				type: 'boolean',
				default: false,
				description:
					'Whether to output one item per generated image (binary under "data") instead of one item per request',
			},
			{
				displayName: 'Timeout (Seconds)',
				name: 'timeoutSeconds',
				type: 'number',
				typeOptions: { minValue: 1, maxValue: 3600 },
				default: 330, // GENERATE_TIMEOUT_MS in seconds; the lint rule wants a literal here
				description:
					'How long one generation may take in total, the answer included (1 to 3600). The service may take up to 5 minutes, so keep this above 300.',
			},
		],
	},
];

interface GenerateOptions {
	acceptLanguage?: string;
	concurrency?: number;
	downloadImages?: boolean;
	maxCreditsPerItem?: number;
	maxCreditsPerExecution?: number;
	maxFileSizeMb?: number;
	splitImages?: boolean;
	timeoutSeconds?: number;
}

const LANGUAGES = ['en', 'zh-CN'];

/** The options of one item, checked: every bad value fails before anything is sent. */
function checkedOptions(raw: unknown): GenerateOptions {
	const options = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
	const language = options.acceptLanguage ?? 'en';
	if (!LANGUAGES.includes(String(language))) {
		throw new ValidationIssue(
			'acceptLanguage',
			`Accept Language "${String(language)}" is not allowed. Allowed values: ${LANGUAGES.join(', ')}`,
		);
	}
	return {
		acceptLanguage: String(language),
		concurrency: numberOption(
			'concurrency',
			'Concurrency',
			options.concurrency,
			BOUNDS.concurrency,
		),
		// Unset stays unset: the default depends on whether the node runs as an agent's tool.
		downloadImages:
			options.downloadImages === undefined ? undefined : Boolean(options.downloadImages),
		maxCreditsPerItem: numberOption(
			'maxCreditsPerItem',
			'Max Credits per Item',
			options.maxCreditsPerItem,
			BOUNDS.maxCreditsPerItem,
		),
		maxCreditsPerExecution: numberOption(
			'maxCreditsPerExecution',
			'Max Credits per Execution',
			options.maxCreditsPerExecution,
			BOUNDS.maxCreditsPerItem,
		),
		maxFileSizeMb: numberOption(
			'maxFileSizeMb',
			'Max File Size (MB)',
			options.maxFileSizeMb,
			BOUNDS.maxFileSizeMb,
		),
		splitImages: Boolean(options.splitImages),
		timeoutSeconds: numberOption(
			'timeoutSeconds',
			'Timeout (Seconds)',
			options.timeoutSeconds,
			BOUNDS.timeoutSeconds,
		),
	};
}

interface GeneratedImage {
	id: string;
	filename: string;
	url: string;
	width: number;
	height: number;
}

interface GenerateResponse extends IDataObject {
	turn_id: string;
	session_id: string;
	warnings: IDataObject[];
	images: GeneratedImage[];
}

type Plan =
	| { ok: true; request: ValidatedGenerate; options: GenerateOptions }
	| { ok: false; error: Error };

function planItem(
	ctx: IExecuteFunctions,
	itemIndex: number,
): { request: ValidatedGenerate; options: GenerateOptions } {
	try {
		const options = checkedOptions(ctx.getNodeParameter('options', itemIndex, {}));
		const request = validateGenerate({
			prompt: ctx.getNodeParameter('prompt', itemIndex, '') as unknown,
			referenceImageIds: ctx.getNodeParameter('referenceImageIds', itemIndex, '') as unknown,
			model: ctx.getNodeParameter('model', itemIndex, AUTO_MODEL) as string,
			ratio: ctx.getNodeParameter('ratio', itemIndex, DEFAULT_RATIO) as string,
			resolution: ctx.getNodeParameter('resolution', itemIndex, '') as string,
			quality: ctx.getNodeParameter('quality', itemIndex, '') as string,
			n: ctx.getNodeParameter('n', itemIndex, 1) as number,
			purpose: ctx.getNodeParameter('purpose', itemIndex, 'free') as string,
			sessionId: ctx.getNodeParameter('sessionId', itemIndex, '') as string,
			maxCreditsPerItem: options.maxCreditsPerItem,
		});
		return { request, options };
	} catch (error) {
		throw asNodeError(ctx, error, itemIndex);
	}
}

function uncertainHint(sessionId?: string): string {
	const where = sessionId ? `session ${sessionId}` : 'the newest "API generation" session';
	return `The generation may have run and may have been charged: check ${where} on the website before running it again`;
}

/** How one node run generates: as an agent's tool or not, and the execution's credit ledger. */
interface RunSettings {
	asTool: boolean;
	ledger: ExecutionLedger;
}

/** Takes the request's estimate from the execution's credit cap, or refuses before anything is sent. */
function reserveCredits(
	ctx: IExecuteFunctions,
	ledger: ExecutionLedger,
	estimate: number,
	cap: number,
	itemIndex: number,
) {
	try {
		ledger.reserve(estimate, cap);
	} catch (error) {
		if (!(error instanceof CreditCapReached)) throw asNodeError(ctx, error, itemIndex);
		const failure = new NodeOperationError(ctx.getNode(), error.message, {
			itemIndex,
			description: `Nothing was sent and no credits were used. Raise Max Credits per Execution (now ${cap}) to allow more.`,
		});
		Object.assign(failure.context, { code: 'credit_cap_reached' });
		throw failure;
	}
}

/** What a 2xx generate answer holds that the node can use, and what was wrong with the rest. */
interface ReadAnswer {
	images: GeneratedImage[];
	warnings: IDataObject[];
	/** Plain-English notes about an answer that does not have the documented shape. */
	problems: string[];
}

function isObject(value: unknown): value is IDataObject {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads the images and warnings of a paid answer whatever its shape: entries that are no image or
 * no warning are skipped with a note instead of failing the item, and no more images are used than
 * were requested (a 10,000-entry list for n = 1 does not start 10,000 downloads).
 */
export function readAnswer(body: IDataObject, requested: number): ReadAnswer {
	const problems: string[] = [];
	const images: GeneratedImage[] = [];
	if (!Array.isArray(body.images)) {
		problems.push('the answer has no images list');
	} else {
		body.images.forEach((image: unknown, index) => {
			if (isObject(image) && typeof image.url === 'string' && image.url) {
				images.push(image as unknown as GeneratedImage);
			} else if (problems.length < 10) {
				problems.push(
					`images[${index}] is not an image with a url (${JSON.stringify(image)?.slice(0, 60)})`,
				);
			}
		});
		if (images.length > requested) {
			problems.push(
				`the answer lists ${images.length} images for ${requested} requested; only the first ${requested} are used`,
			);
			images.length = requested;
		}
	}
	const warnings: IDataObject[] = [];
	if (body.warnings !== undefined && !Array.isArray(body.warnings)) {
		problems.push('the warnings field is not a list');
	} else {
		for (const warning of (body.warnings as unknown[] | undefined) ?? []) {
			if (isObject(warning)) warnings.push(warning);
			else problems.push(`a warning is not an object (${JSON.stringify(warning)?.slice(0, 60)})`);
		}
	}
	return { images, warnings, problems };
}

async function generateOne(
	ctx: IExecuteFunctions,
	itemIndex: number,
	{ request, options }: { request: ValidatedGenerate; options: GenerateOptions },
	connection: Connection,
	{ asTool, ledger }: RunSettings,
): Promise<INodeExecutionData[]> {
	const estimate = request.creditsEstimated;
	const cap = Number(options.maxCreditsPerExecution) || 0;
	reserveCredits(ctx, ledger, estimate, cap, itemIndex);
	const hint = uncertainHint(request.body.session_id);
	let response: ApiResponse<GenerateResponse>;
	try {
		response = await apiRequest<GenerateResponse>(
			ctx,
			{
				method: 'POST',
				path: '/api/v1/generate',
				body: request.body as unknown as IDataObject,
				headers: { 'Accept-Language': options.acceptLanguage ?? 'en' },
				timeoutMs: (options.timeoutSeconds ?? GENERATE_TIMEOUT_MS / 1000) * 1000,
				itemIndex,
				uncertainOutcomeHint: hint,
				// After a 2xx the generation ran and was paid for: keep whatever came back.
				tolerateUnreadable: true,
			},
			connection,
		);
	} catch (error) {
		// The transport adds the hint exactly when the generation may have run after all.
		const { message, description, context } = error as NodeOperationError;
		const uncertain = [message, description].some((text) => String(text ?? '').includes(hint));
		ledger.settle(estimate, uncertain ? estimate : 0);
		if (uncertain && context) context.mayHaveBeenCharged = true;
		throw asNodeError(ctx, error, itemIndex);
	}
	const charged = Number(response.body.credits_charged);
	ledger.settle(estimate, Number.isFinite(charged) ? charged : estimate);
	const answer = response.unreadable
		? { images: [], warnings: [], problems: [response.unreadable] }
		: readAnswer(response.body, request.body.n);
	const result: IDataObject = {
		...response.body,
		request_id: response.requestId ?? null,
		credits_estimated: estimate,
	};
	if (cap > 0) result.credit_budget = creditBudget(cap, ledger.spent);
	const hints = answer.warnings.map(
		(warning) =>
			`Item ${itemIndex}: ${String(warning.type)} ${String(warning.feature)}: ${String(warning.details ?? '')}`,
	);
	if (answer.problems.length) {
		// The service said 2xx, so the credits are gone: the item stays, with what went wrong.
		result.answer_problems = answer.problems;
		result.session_id ??= request.body.session_id ?? null;
		hints.push(
			`Item ${itemIndex}: the generation answer was not as documented (${answer.problems.join('; ')}). ${hint}`,
		);
	}
	if (hints.length && typeof ctx.addExecutionHints === 'function') {
		ctx.addExecutionHints(
			...hints.map((message) => ({ message, location: 'outputPane' as const })),
		);
	}
	const images = answer.images;

	// The images are paid for: a failed download is reported on the item, never thrown.
	const binaries: Array<IBinaryData | undefined> = [];
	const downloadErrors: IDataObject[] = [];
	// An agent sees JSON only: as a tool, images are downloaded only when the user asks for it.
	if (options.downloadImages ?? !asTool) {
		const bounds = {
			maxBytes: (options.maxFileSizeMb ?? BOUNDS.maxFileSizeMb.fallback) * 1024 * 1024,
		};
		for (const [index, image] of images.entries()) {
			try {
				binaries[index] = await downloadBinary(
					ctx,
					image.url,
					itemIndex,
					connection,
					typeof image.filename === 'string' ? image.filename : undefined,
					bounds,
				);
			} catch (error) {
				downloadErrors.push({ index, url: image.url, error: (error as Error).message });
			}
		}
	}
	if (downloadErrors.length) result.download_errors = downloadErrors;

	if (options.splitImages) {
		const shared = { ...result };
		delete shared.images;
		return images.map((image, index) => ({
			json: { ...shared, image: image as unknown as IDataObject, image_index: index },
			binary: binaries[index] ? { data: binaries[index]! } : undefined,
			pairedItem: { item: itemIndex },
		}));
	}
	const binary: Record<string, IBinaryData> = {};
	binaries.forEach((data, index) => {
		if (data) binary[`image_${index}`] = data;
	});
	return [
		{
			json: result,
			binary: Object.keys(binary).length ? binary : undefined,
			pairedItem: { item: itemIndex },
		},
	];
}

/**
 * n8n's Retry On Fail re-runs the whole node when it throws, and also when its first output item holds
 * an `error` (Continue On Fail): every item would be generated and charged again. n8n offers nodes no
 * way to narrow it, so Generate refuses to run with it, before anything is sent; the node itself
 * retries what is safe (429 rate_limited, refused connections) and Continue On Fail keeps the others.
 */
function refuseRetryOnFail(ctx: IExecuteFunctions): void {
	if (ctx.getNode().retryOnFail !== true) return;
	const error = new NodeOperationError(
		ctx.getNode(),
		'Generate does not run with Retry On Fail: n8n would re-run every item of the node, generating and charging the successful ones again',
		{
			description:
				'Turn off Settings → Retry On Fail for this node. The node already retries what is safe (429 rate_limited after Retry-After, refused connections); set Settings → On Error → Continue so one failing item does not stop the others. Nothing was sent.',
		},
	);
	Object.assign(error.context, { code: 'retry_on_fail_refused' });
	throw error;
}

/**
 * Every item is validated before the first request, so a bad row in a batch costs nothing and
 * stops nothing half-way. Requests then run with bounded concurrency, output in input order.
 */
export async function execute(
	this: IExecuteFunctions,
	items: INodeExecutionData[],
): Promise<INodeExecutionData[]> {
	refuseRetryOnFail(this);
	const continueOnFail = this.continueOnFail();
	const connection = await getConnection(this);
	const run: RunSettings = { asTool: runsAsTool(this), ledger: new ExecutionLedger(this) };
	const plans: Plan[] = items.map((_item, itemIndex) => {
		try {
			return { ok: true, ...planItem(this, itemIndex) };
		} catch (error) {
			if (!continueOnFail) throw asNodeError(this, error, itemIndex);
			return { ok: false, error: error as Error };
		}
	});
	const first = plans.find((plan) => plan.ok);
	const concurrency = Math.min(MAX_CONCURRENCY, (first?.ok && first.options.concurrency) || 1);

	const charged: string[] = [];
	try {
		const outputs = await mapWithConcurrency(plans, concurrency, async (plan, itemIndex) => {
			if (!plan.ok) return [errorItem(plan.error, itemIndex)];
			throwIfStopped(this, itemIndex);
			try {
				const output = await generateOne(this, itemIndex, plan, connection, run);
				charged.push(String(output[0]?.json.turn_id ?? ''));
				return output;
			} catch (error) {
				if (continueOnFail) return [errorItem(error, itemIndex)];
				throw asNodeError(this, error, itemIndex);
			}
		});
		return outputs.flat();
	} catch (error) {
		// Without Continue On Fail n8n drops this run's output; say what was already paid for.
		const paid = charged.filter(Boolean);
		const failure = asNodeError(this, error);
		if (paid.length) {
			failure.description = [
				failure.description,
				`Generated and charged before this error, not in the output: ${paid.join(', ')}. Set the node's On Error setting to "Continue" so one failing item does not discard the others.`,
			]
				.filter(Boolean)
				.join(' · ');
		}
		throw failure;
	}
}
