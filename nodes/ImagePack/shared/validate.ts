/**
 * Checks a Generate request against the catalog before anything is sent, and builds the API body.
 * Pure: no n8n, no HTTP. Every failure names the parameter and the allowed values.
 */
import {
	AUTO_MODEL,
	type ImageCount,
	IMAGE_COUNTS,
	MAX_PROMPT_LENGTH,
	MAX_REFERENCES,
	MODEL_IDS,
	PURPOSES,
	type Purpose,
	type Quality,
	QUALITIES,
	type Ratio,
	RATIOS,
	type Resolution,
	RESOLUTIONS,
	autoCandidates,
	estimateCredits,
	findModel,
} from './catalog';

export interface GenerateParameters {
	prompt: string;
	referenceImageIds: unknown;
	model: string;
	ratio: string;
	resolution: string;
	quality?: string;
	n: number | string;
	purpose: string;
	sessionId: string;
	maxCreditsPerItem?: number;
}

export interface GenerateBody {
	prompt?: string;
	ref_image_ids?: string[];
	model: string;
	ratio: Ratio;
	resolution?: Resolution;
	quality?: Quality;
	n: ImageCount;
	purpose_id: Purpose;
	session_id?: string;
}

export interface ValidatedGenerate {
	body: GenerateBody;
	/** Credits the service will reserve (for `auto`: the highest price among the models it may pick). */
	creditsEstimated: number;
}

export class ValidationIssue extends Error {
	constructor(
		readonly parameter: string,
		message: string,
	) {
		super(message);
	}
}

const list = (values: readonly (string | number)[]) =>
	values.map((value) => String(value)).join(', ');

/**
 * Reference image ids from whatever the user wired in: a comma/space separated string, an array of
 * ids, or the `images` array of an earlier Generate (objects with `id`), nested or not.
 */
export function parseReferenceImageIds(value: unknown): string[] {
	const ids: string[] = [];
	const visit = (entry: unknown) => {
		if (entry === null || entry === undefined || entry === '') return;
		if (Array.isArray(entry)) return entry.forEach(visit);
		if (typeof entry === 'object') {
			const id =
				(entry as { id?: unknown; imageId?: unknown }).id ??
				(entry as { imageId?: unknown }).imageId;
			if (id === undefined) {
				throw new ValidationIssue(
					'referenceImageIds',
					'Reference Image IDs must be image ids (img_...) or objects with an "id", such as the "images" of an earlier Generate',
				);
			}
			return visit(id);
		}
		const text = String(entry).trim();
		if (text.startsWith('[')) {
			try {
				return visit(JSON.parse(text));
			} catch {
				// Not JSON after all: fall through to splitting.
			}
		}
		ids.push(...text.split(/[\s,;]+/).filter(Boolean));
	};
	visit(value);
	const malformed = ids.find((id) => !/^img_[A-Za-z0-9_-]+$/.test(id));
	if (malformed) {
		throw new ValidationIssue(
			'referenceImageIds',
			`"${malformed}" is not an image id. Use the images[].id values of an earlier Generate (they start with img_)`,
		);
	}
	return ids;
}

function oneOf<T extends string | number>(
	parameter: string,
	label: string,
	value: unknown,
	allowed: readonly T[],
	context = '',
): T {
	const match = allowed.find((candidate) => String(candidate) === String(value).trim());
	if (match === undefined) {
		throw new ValidationIssue(
			parameter,
			`${label} "${String(value)}" is not allowed${context}. Allowed values: ${list(allowed)}`,
		);
	}
	return match;
}

/** Validates one item's Generate parameters; throws a ValidationIssue naming the parameter. */
export function validateGenerate(parameters: GenerateParameters): ValidatedGenerate {
	// String(): an expression may hand over a number; the API counts characters (code points), not UTF-16 units.
	const prompt = String(parameters.prompt ?? '').trim();
	const promptLength = [...prompt].length;
	const references = parseReferenceImageIds(parameters.referenceImageIds);
	if (!prompt && references.length === 0) {
		throw new ValidationIssue(
			'prompt',
			'Prompt is empty and no Reference Image IDs are given: provide a prompt, reference images, or both',
		);
	}
	if (promptLength > MAX_PROMPT_LENGTH) {
		throw new ValidationIssue(
			'prompt',
			`Prompt has ${promptLength} characters; the maximum is ${MAX_PROMPT_LENGTH}`,
		);
	}

	const modelId = oneOf('model', 'Model', parameters.model || AUTO_MODEL, MODEL_IDS);
	const model = findModel(modelId);
	const on = model ? ` for ${model.id}` : '';

	const ratio = oneOf('ratio', 'Ratio', parameters.ratio, model?.ratios ?? RATIOS, on);
	const resolution = parameters.resolution
		? oneOf(
				'resolution',
				'Resolution',
				parameters.resolution,
				model?.resolutions ?? RESOLUTIONS,
				on,
			)
		: undefined;
	const n = oneOf('n', 'Number of images', parameters.n, IMAGE_COUNTS);
	const purpose = oneOf('purpose', 'Purpose', parameters.purpose || 'free', PURPOSES);
	const quality =
		model?.usesQuality && parameters.quality
			? oneOf('quality', 'Quality', parameters.quality, QUALITIES, on)
			: undefined;

	const referenceLimit = model?.referenceLimit ?? MAX_REFERENCES;
	if (references.length > referenceLimit) {
		throw new ValidationIssue(
			'referenceImageIds',
			`${references.length} reference images given; ${model ? model.id : 'every model'} accepts at most ${referenceLimit}`,
		);
	}

	const query = {
		resolution: resolution ?? ('' as const),
		quality,
		referenceCount: references.length,
	};
	if (!model && autoCandidates(ratio, query).length === 0) {
		throw new ValidationIssue(
			'resolution',
			`No model can serve ratio ${ratio} at ${resolution ?? 'the default resolution'} with ${references.length} reference images`,
		);
	}
	const creditsEstimated = estimateCredits(modelId, ratio, query, n) ?? 0;
	const budget = parameters.maxCreditsPerItem ?? 0;
	if (budget > 0 && creditsEstimated > budget) {
		throw new ValidationIssue(
			'maxCreditsPerItem',
			`This request would reserve ${creditsEstimated} credits, more than Max Credits per Item (${budget})`,
		);
	}

	const sessionId = String(parameters.sessionId ?? '').trim();
	if (sessionId && !/^s_[A-Za-z0-9_-]+$/.test(sessionId)) {
		throw new ValidationIssue(
			'sessionId',
			`"${sessionId}" is not a session id (they look like s_...)`,
		);
	}

	const body: GenerateBody = { model: modelId, ratio, n, purpose_id: purpose };
	if (prompt) body.prompt = prompt;
	if (references.length) body.ref_image_ids = references;
	if (resolution) body.resolution = resolution;
	if (quality) body.quality = quality;
	if (sessionId) body.session_id = sessionId;
	return { body, creditsEstimated };
}
