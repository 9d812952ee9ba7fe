/**
 * What a paid generation gives the workflow: its answer read whatever its shape, the images as
 * binaries, their signed links, and the output items. The generation is paid for by then: a download
 * or a link that fails is reported on the item, never thrown.
 *
 * Image links: for each generated image, the file endpoint's signed link, which opens the image
 * without the API key for about an hour. An AI agent's chat user sees only the text the model writes
 * (n8n drops a tool's binaries), and a Slack message or an e-mail needs a link rather than a file, so
 * the node hands out links: always as a tool, with the Image Links option otherwise. They sit next to
 * the API's answer (`image_links`, in the order of `images`), which stays as returned.
 */
import type { IBinaryData, IDataObject, INodeExecutionData } from 'n8n-workflow';

import { rule } from '../../../shared/codes';
import { chargeHint, errorFacts } from '../../../shared/errors';
import { type Answer, downloadBinary, signedFileLink } from '../../../transport';
import { addHints } from '../../items';
import { creditBudget } from './credits';
import type { ItemRun } from './plan';

export interface GeneratedImage {
	id: string;
	filename: string;
	url: string;
	width: number;
	height: number;
}

export interface GenerateResponse extends IDataObject {
	turn_id: string;
	session_id: string;
	warnings: IDataObject[];
	images: GeneratedImage[];
}

/** A generate answer as the transport returned it. */
export type Generated = Answer<GenerateResponse>;

/** What a 2xx generate answer holds that the node can use, and what was wrong with the rest. */
export interface ReadAnswer {
	images: GeneratedImage[];
	warnings: IDataObject[];
	/** Plain-English notes about an answer that does not have the documented shape. */
	problems: string[];
}

function isObject(value: unknown): value is IDataObject {
	return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads the images and warnings of a paid answer: entries that are no image or no warning are
 * skipped with a note instead of failing the item, and no more images are used than were requested
 * (a 10,000-entry list for n = 1 does not start 10,000 downloads).
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

/**
 * What the service says it charged, when that is a number of credits (finite, not negative);
 * anything else is off contract and the caps count the estimate instead (execute.ts).
 */
export function chargedCredits(body: IDataObject): number | undefined {
	const charged = body.credits_charged;
	return typeof charged === 'number' && Number.isFinite(charged) && charged >= 0
		? charged
		: undefined;
}

/** One entry of `image_links`: the link and until when it works, or why there is none. */
export interface ImageLink extends IDataObject {
	id: string | null;
	url: string | null;
	expires_at?: string;
	error?: string;
}

/** Why an image has no link, in words a model or a person can act on. */
function missingLinkText(error: unknown): string {
	const facts = errorFacts(error);
	const details = [
		facts.code && `code ${facts.code}`,
		facts.httpStatus && `HTTP ${facts.httpStatus}`,
		facts.requestId && `request id ${facts.requestId}`,
	].filter(Boolean);
	const reason = facts.reason.replace(/\.?\s*$/, '');
	return `No link: ${reason}${details.length ? ` (${details.join(', ')})` : ''}. The image was generated and charged; only its link is missing.`;
}

/**
 * Adds `image_links` to `result` (one entry per image, in order), and an execution hint when some
 * could not be made. One request per image, one after the other; after an error that holds for the
 * whole key (scope, revoked key, Stop) the remaining images get the same answer without a request.
 */
async function addImageLinks(
	{ ctx, connection, itemIndex }: ItemRun,
	images: GeneratedImage[],
	result: IDataObject,
): Promise<void> {
	if (!images.length) return;
	const links: ImageLink[] = [];
	let stopped: string | undefined;
	for (const image of images) {
		const id = typeof image.id === 'string' ? image.id : null;
		if (stopped) {
			links.push({ id, url: null, error: stopped });
			continue;
		}
		try {
			const { url, expiresAt } = await signedFileLink(ctx, connection, image.url, { itemIndex });
			links.push({ id, url, expires_at: expiresAt });
		} catch (error) {
			const text = missingLinkText(error);
			links.push({ id, url: null, error: text });
			if (rule(errorFacts(error).code).keyWide) stopped = text;
		}
	}
	result.image_links = links;
	const missing = links.filter((link) => link.url === null);
	if (missing.length) {
		const message = `Item ${itemIndex}: ${missing.length} of ${links.length} image links could not be made. ${missing[0].error}`;
		addHints(ctx, [message]);
	}
}

/** The item's JSON: the answer as returned plus what the node adds; hints for what differs. */
function resultOf(
	{ ctx, itemIndex, plan: { request, options } }: ItemRun,
	answer: Answer<GenerateResponse>,
	read: ReadAnswer,
): IDataObject {
	const result: IDataObject = {
		...answer.body,
		request_id: answer.requestId ?? null,
		credits_estimated: request.creditsEstimated,
	};
	const budget = creditBudget(ctx, options.maxCreditsPerExecution);
	if (budget) result.credit_budget = budget;
	if (!answer.unreadable && chargedCredits(answer.body) === undefined) {
		read.problems.push(
			`credits_charged is ${JSON.stringify(answer.body.credits_charged) ?? 'missing'}, not a number of credits: the credit caps count the estimate (${request.creditsEstimated})`,
		);
	}
	const hints = read.warnings.map(
		(warning) =>
			`Item ${itemIndex}: ${String(warning.type)} ${String(warning.feature)}: ${String(warning.details ?? '')}`,
	);
	if (read.problems.length) {
		// The service said 2xx, so the credits are gone: the item stays, with what went wrong.
		result.answer_problems = read.problems;
		result.session_id ??= request.body.session_id ?? null;
		hints.push(
			`Item ${itemIndex}: the generation answer was not as documented (${read.problems.join('; ')}). ${chargeHint(request.body.session_id)}`,
		);
	}
	addHints(ctx, hints);
	return options.outputFields === 'listing' ? listingFields(result) : result;
}

/**
 * Output Fields = Listing: what a product listing needs of a generation, and whatever went wrong
 * (the rest of the answer stays at the service, under the session).
 */
function listingFields(result: IDataObject): IDataObject {
	const images = Array.isArray(result.images) ? (result.images as unknown[]) : [];
	const kept: IDataObject = {
		turn_id: result.turn_id,
		session_id: result.session_id,
		credits_charged: result.credits_charged,
		images: images.map((image) =>
			isObject(image) ? { id: image.id, url: image.url } : (image as IDataObject),
		),
	};
	if (Array.isArray(result.warnings) && result.warnings.length) kept.warnings = result.warnings;
	if (result.answer_problems)
		Object.assign(kept, { answer_problems: result.answer_problems, request_id: result.request_id });
	if (result.credit_budget) kept.credit_budget = result.credit_budget;
	return kept;
}

/** The images are paid for: a failed download is reported on the item, never thrown. */
async function downloadImages(
	{ ctx, connection, asTool, itemIndex, plan: { options } }: ItemRun,
	images: GeneratedImage[],
	result: IDataObject,
): Promise<Array<IBinaryData | undefined>> {
	const binaries: Array<IBinaryData | undefined> = [];
	// An agent sees JSON only: as a tool, images are downloaded only when the user asks for it.
	if (!(options.downloadImages ?? !asTool)) return binaries;
	const errors: IDataObject[] = [];
	for (const [index, image] of images.entries()) {
		try {
			binaries[index] = await downloadBinary(ctx, connection, image.url, {
				itemIndex,
				fileName: typeof image.filename === 'string' ? image.filename : undefined,
				maxBytes: options.maxFileBytes,
			});
		} catch (error) {
			errors.push({ index, url: image.url, error: (error as Error).message });
		}
	}
	if (errors.length) result.download_errors = errors;
	return binaries;
}

/** One item per request (binaries image_0 …), or with One Item per Image one per image (binary data). */
function outputItems(
	itemIndex: number,
	result: IDataObject,
	images: GeneratedImage[],
	binaries: Array<IBinaryData | undefined>,
	splitImages: boolean,
): INodeExecutionData[] {
	if (splitImages) {
		const links = Array.isArray(result.image_links) ? (result.image_links as unknown[]) : undefined;
		const shared = { ...result };
		delete shared.images;
		delete shared.image_links;
		// Paid with no image to show: still one item, with what was charged and why.
		if (!images.length) {
			return [
				{ json: { ...shared, image: null, image_index: null }, pairedItem: { item: itemIndex } },
			];
		}
		return images.map((image, index) => ({
			json: {
				...shared,
				image: image as unknown as IDataObject,
				image_index: index,
				...(links && { image_link: links[index] ?? null }), // the image's own link
			},
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

/** What is left of an item once its generation is answered: downloads, links, output items. */
export type Finish = () => Promise<INodeExecutionData[]>;

/**
 * A generation answered: `paid` names what was paid for (its turn, else the item and request id),
 * unset while it is still running; `finish` is the rest of the item.
 */
export interface Answered {
	paid: string | undefined;
	finish: Finish;
}

/**
 * The item's output: the answer read now; `finish` downloads and links its images as the options say
 * and makes its output items (execute.ts decides when).
 */
export function outputOf(item: ItemRun, answer: Answer<GenerateResponse>): Answered {
	const { options, request } = item.plan;
	const read = answer.unreadable
		? { images: [], warnings: [], problems: [answer.unreadable] }
		: readAnswer(answer.body, request.body.n);
	const result = resultOf(item, answer, read);
	const finish = async () => {
		const binaries = await downloadImages(item, read.images, result);
		// Links when the option says so, otherwise only as an agent's tool.
		if (options.imageLinks ?? item.asTool) await addImageLinks(item, read.images, result);
		return outputItems(item.itemIndex, result, read.images, binaries, options.splitImages);
	};
	const paid =
		typeof result.turn_id === 'string' && result.turn_id
			? result.turn_id
			: `item ${item.itemIndex} (request id ${answer.requestId ?? 'unknown'}, answer not as documented)`;
	return { paid, finish };
}
