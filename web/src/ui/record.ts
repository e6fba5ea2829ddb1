// Recording a voice note from the composer (docs/adr/0137): the microphone through
// MediaRecorder, then the recording decoded and written as 16 kHz mono PCM WAV, the kind
// of voice note Chips hears.
import { wavOf } from "../files";

const RATE = 16_000;

export interface Recorder {
  /** Stop, and the recording as a WAV file. */
  stop: () => Promise<File>;
  /** Stop and throw it away. */
  cancel: () => void;
}

export async function startRecording(): Promise<Recorder> {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  const rec = new MediaRecorder(stream);
  const parts: Blob[] = [];
  rec.ondataavailable = (e) => {
    if (e.data.size) parts.push(e.data);
  };
  const stopped = new Promise<void>((resolve) => (rec.onstop = () => resolve()));
  rec.start();
  const release = () => stream.getTracks().forEach((t) => t.stop());
  return {
    async stop() {
      rec.stop();
      await stopped;
      release();
      const recorded = await new Blob(parts, { type: rec.mimeType }).arrayBuffer();
      const ctx = new AudioContext();
      const decoded = await ctx.decodeAudioData(recorded);
      void ctx.close();
      const offline = new OfflineAudioContext(1, Math.max(1, Math.ceil(decoded.duration * RATE)), RATE);
      const source = offline.createBufferSource();
      source.buffer = decoded;
      source.connect(offline.destination);
      source.start();
      const mono = await offline.startRendering();
      return new File([wavOf(mono.getChannelData(0), RATE)], "voice-note.wav", { type: "audio/wav" });
    },
    cancel() {
      if (rec.state !== "inactive") rec.stop();
      release();
    },
  };
}
