/** A downloaded file's MIME type: the server's, or the file name's when the server gives none. */
import { mimeTypeFor } from '../../../nodes/ImagePack/transport/files';

describe('mimeTypeFor', () => {
	it.each([
		['a.png', 'image/png'],
		['a.PNG', 'image/png'],
		['a.jpg', 'image/jpeg'],
		['a.jpeg', 'image/jpeg'],
		['a.JPEG', 'image/jpeg'],
		['a.webp', 'image/webp'],
		['a.gif', 'image/gif'],
		['a.avif', 'image/avif'],
		['archive.tar.png', 'image/png'],
		['a.bmp', 'application/octet-stream'],
		['noextension', 'application/octet-stream'],
		['', 'application/octet-stream'],
	])('guesses %p from the extension: %s', (fileName, mimeType) => {
		expect(mimeTypeFor(fileName)).toBe(mimeType);
	});

	it('prefers a declared Content-Type, without parameters and in lower case', () => {
		expect(mimeTypeFor('a.png', 'image/webp')).toBe('image/webp');
		expect(mimeTypeFor('a.bin', 'Image/PNG; charset=binary')).toBe('image/png');
		expect(mimeTypeFor('a', ' image/jpeg ;q=1')).toBe('image/jpeg');
	});

	it('ignores generic or empty Content-Types and falls back to the extension', () => {
		expect(mimeTypeFor('a.png', 'application/octet-stream')).toBe('image/png');
		expect(mimeTypeFor('a.png', 'binary/octet-stream')).toBe('image/png');
		expect(mimeTypeFor('a.png', 'Application/Octet-Stream; x=1')).toBe('image/png');
		expect(mimeTypeFor('a.png', '')).toBe('image/png');
		expect(mimeTypeFor('a.png', undefined)).toBe('image/png');
	});
});
