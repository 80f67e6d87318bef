// SPDX-License-Identifier: GPL-3.0-or-later
//
// Flamenco job type "Unified Particles: Bake and Render": one task bakes the Unified Particles
// simulation of the submitted .blend (in place), then the frames are rendered in chunks, each chunk
// task depending on the bake task, then (optionally) a preview video is made from the frames.
//
// Install: copy this file into the `scripts/` folder next to the `flamenco-manager` executable and
// restart the Manager. The job type is named after the file: "unified-particles-bake-render". In
// Blender, press the refresh button next to the job type list of the Flamenco add-on (Output
// Properties > Flamenco) and pick "Unified Particles: Bake and Render". See docs/baking.md.
//
// Written against Flamenco's documented job-compiler API and its built-in job type:
// - Job types (scripts/ folder, JOB_TYPE, compileJob, task types, settings `eval`):
//   https://flamenco.blender.org/usage/job-types/
// - Commands and their parameters (`blender-render`: exe, exeArgs, argsBefore, blendfile, args,
//   run as `{exe} {exeArgs} {argsBefore} {blendfile} {args}`; `exec`: exe, args, run without a
//   shell; `frames-to-video`): https://flamenco.blender.org/usage/jobs-tasks-commands/commands/
// - The built-in "Simple Blender Render" job type, whose settings, render command, render output
//   path handling and preview-video task this file follows:
//   https://projects.blender.org/studio/flamenco/src/branch/main/internal/manager/job_compilers/scripts/simple_blender_render.js
//   (mirrored at https://github.com/blender/flamenco, same path). renderOutputPath(),
//   authorRenderTasks() and authorCreateVideoTask() below are adapted from it (GPL-3.0-or-later,
//   Blender Foundation); the settings it evaluates in the add-on (render_output_path, fps, format,
//   image_file_extension, has_previews) are the same.
// - The globals the Manager defines for these scripts (author, path, print, frameChunker,
//   formatTimestampLocal; script loading and job type naming): internal/manager/job_compilers/
//   js_globals.go, author.go, js_path.go and scripts.go in the same repository; the default
//   `{blenderArgs}` ("-b -y") in internal/manager/config/defaults.go; how the worker builds the
//   Blender command line in internal/worker/command_blender.go.
//
// The bake covers the frames in `bake_frames` (START-END). A simulation has to run from its first
// frame, so when only a part of the animation is rendered (frames "100-150"), the bake must still
// start at the simulation start (the scene's first frame, e.g. "1-150"), and it must reach at least
// the last rendered frame. From the Blender add-on, `bake_frames` defaults to the scene's frame range.
// When the submitted job leaves it empty, it is the span of the rendered frames (first to last).
// A bake that ends before the last rendered frame is rejected.

const JOB_TYPE = {
    label: "Unified Particles: Bake and Render",
    description: "Bake the Unified Particles simulation once, then render the frames in chunks",
    settings: [
        // Settings for artists to determine:
        { key: "frames", type: "string", required: true,
          eval: "f'{C.scene.frame_start}-{C.scene.frame_end}'",
          evalInfo: {
            showLinkButton: true,
            description: "Scene frame range",
          },
          description: "Frame range to render. Examples: '47', '1-30', '3, 5-10, 47-327'" },
        { key: "chunk_size", type: "int32", default: 1, propargs: {min: 1},
          description: "Number of frames to render in one Blender render task",
          visible: "submission" },
        { key: "bake_frames", type: "string", required: false,
          eval: "f'{C.scene.frame_start}-{C.scene.frame_end}'",
          evalInfo: {
            showLinkButton: true,
            description: "Scene frame range",
          },
          description: "Frames to simulate, START-END: from the simulation start (the scene's first " +
              "frame) to at least the last rendered frame. Empty: from the first to the last rendered frame" },
        { key: "bake_mode", type: "string", required: true, default: "blender",
          choices: ["blender", "python-module"],
          description: "How the bake runs. 'blender': the workers' Blender, with the Unified Particles " +
              "extension installed and enabled. 'python-module': python -m unified_particles.farm " +
              "(Blender as a Python module, unified_particles importable)",
          visible: "submission" },
        { key: "python_exe", type: "string", default: "python",
          description: "Python executable for the 'python-module' bake mode (with bpy installed)",
          visible: "submission" },

        // render_output_root + add_path_components determine the value of render_output_path.
        { key: "render_output_root", type: "string", subtype: "dir_path", required: true, visible: "submission",
          description: "Base directory of where render output is stored. Will have some job-specific parts appended to it" },
        { key: "add_path_components", type: "int32", required: true, default: 0, propargs: {min: 0, max: 32}, visible: "submission",
          description: "Number of path components of the current blend file to use in the render output path" },
        { key: "render_output_path", type: "string", subtype: "file_path", editable: false,
          eval: "str(Path(abspath(settings.render_output_root), last_n_dir_parts(settings.add_path_components), jobname, '{timestamp}', '######'))",
          description: "Final file path of where render output will be saved" },

        // Automatically evaluated settings:
        { key: "blendfile", type: "string", required: true, description: "Path of the Blend file to bake and render", visible: "web" },
        { key: "fps", type: "float", eval: "C.scene.render.fps / C.scene.render.fps_base", visible: "hidden" },
        { key: "format", type: "string", required: true, eval: "C.scene.render.image_settings.file_format", visible: "web" },
        { key: "image_file_extension", type: "string", required: true, eval: "C.scene.render.file_extension", visible: "hidden",
          description: "File extension used when rendering images" },
        { key: "has_previews", type: "bool", required: false, eval: "C.scene.render.image_settings.use_preview", visible: "hidden",
          description: "Whether Blender will render preview images." },
    ]
};

const BAKE_MODES = ["blender", "python-module"];

// Set of scene.render.image_settings.file_format values that produce files which FFmpeg is known
// not to handle as input (as in Flamenco's simple_blender_render.js).
const ffmpegIncompatibleImageFormats = new Set([
    "EXR",
    "MULTILAYER", // Old CLI-style format indicators
    "OPEN_EXR",
    "OPEN_EXR_MULTILAYER", // DNA values for these formats.
]);

// File formats that would render to video: not supported, frames are rendered in parallel chunks.
const videoFormats = ["FFMPEG", "AVI_RAW", "AVI_JPEG"];

function compileJob(job) {
    print("Unified Particles bake and render job submitted");
    print("job: ", job);

    const settings = job.settings;
    const plan = checkSettings(settings);

    const renderOutput = renderOutputPath(job);
    // Make sure that when the job is investigated later, it shows the actually-used render output:
    settings.render_output_path = renderOutput;
    const renderDir = path.dirname(renderOutput);

    const bakeTask = authorBakeTask(settings, plan.bakeStart, plan.bakeEnd);
    const renderTasks = authorRenderTasks(settings, renderDir, renderOutput);
    const videoTask = authorCreateVideoTask(settings, renderDir);

    job.addTask(bakeTask);
    for (const rt of renderTasks) {
        // Every render task needs the baked .blend and its cache folder.
        rt.addDependency(bakeTask);
        job.addTask(rt);
    }
    if (videoTask) {
        // If there is a video task, all render tasks have to be done first.
        for (const rt of renderTasks) {
            videoTask.addDependency(rt);
        }
        job.addTask(videoTask);
    }
}

// Validate the settings; returns the bake range. Throws an Error that says what to change.
function checkSettings(settings) {
    if (typeof settings.blendfile !== "string" || settings.blendfile.trim() === "") {
        throw new Error("Unified Particles job: the 'blendfile' setting is empty; submit a saved .blend file");
    }
    if (BAKE_MODES.indexOf(settings.bake_mode) < 0) {
        throw new Error(`Unified Particles job: unknown bake_mode ${JSON.stringify(settings.bake_mode)}; ` +
            `use one of ${BAKE_MODES.map((m) => JSON.stringify(m)).join(", ")}`);
    }
    if (settings.bake_mode === "python-module" &&
        (typeof settings.python_exe !== "string" || settings.python_exe.trim() === "")) {
        throw new Error("Unified Particles job: the 'python_exe' setting is empty; the 'python-module' " +
            "bake mode needs a Python executable with bpy installed (e.g. 'python')");
    }
    const chunkSize = Number(settings.chunk_size);
    if (!Number.isInteger(chunkSize) || chunkSize < 1) {
        throw new Error(`Unified Particles job: chunk_size must be a whole number of frames, 1 or more, ` +
            `got ${JSON.stringify(settings.chunk_size)}`);
    }
    settings.chunk_size = chunkSize;
    if (videoFormats.indexOf(settings.format) >= 0) {
        throw new Error(`Unified Particles job: this job type only renders images, and not "${settings.format}"; ` +
            "choose an image format (PNG, OPEN_EXR, ...) in the Output Properties");
    }

    const renderFrames = parseFrames(settings.frames, "frames");
    const firstRendered = renderFrames[0];
    const lastRendered = renderFrames[renderFrames.length - 1];

    let bakeStart = firstRendered;
    let bakeEnd = lastRendered;
    const bakeText = settings.bake_frames === undefined || settings.bake_frames === null
        ? "" : String(settings.bake_frames).trim();
    if (bakeText !== "") {
        const range = parseBakeRange(bakeText);
        bakeStart = range[0];
        bakeEnd = range[1];
    }
    if (bakeEnd < lastRendered) {
        throw new Error(`Unified Particles job: bake_frames "${bakeStart}-${bakeEnd}" ends before the last ` +
            `rendered frame ${lastRendered}; bake from the simulation start to at least frame ${lastRendered} ` +
            `(e.g. "${Math.min(bakeStart, firstRendered)}-${lastRendered}")`);
    }
    if (bakeStart > firstRendered) {
        // Allowed: frames before the simulation start show the objects before the simulation.
        print(`Note: rendered frames ${firstRendered}-${bakeStart - 1} are before the bake start ${bakeStart}`);
    }
    settings.bake_frames = `${bakeStart}-${bakeEnd}`;
    return { bakeStart: bakeStart, bakeEnd: bakeEnd };
}

// "1-10,20,30..40" -> sorted list of unique frames. Same syntax as Flamenco's frameChunker
// ("A-B" or Blender's "A..B", comma separated); throws an Error naming the setting.
function parseFrames(value, key) {
    const text = value === undefined || value === null ? "" : String(value).trim();
    const hint = `Use e.g. "1-250", "47" or "1-10,20-30"`;
    if (text === "") {
        throw new Error(`Unified Particles job: the '${key}' setting is empty. ${hint}`);
    }
    const frames = new Set();
    for (const part of text.replaceAll("..", "-").split(",")) {
        const ends = part.split("-").map((s) => s.trim());
        if (ends.length > 2 || ends.some((s) => !/^[0-9]+$/.test(s))) {
            throw new Error(`Unified Particles job: invalid ${key} "${text}" (at "${part.trim()}"). ${hint}; ` +
                "frame numbers are whole numbers, 0 or more");
        }
        const start = parseInt(ends[0], 10);
        const end = parseInt(ends[ends.length - 1], 10);
        if (end < start) {
            throw new Error(`Unified Particles job: invalid ${key} "${text}": "${part.trim()}" ends before it starts. ${hint}`);
        }
        for (let frame = start; frame <= end; frame++) {
            frames.add(frame);
        }
    }
    return Array.from(frames).sort((a, b) => a - b);
}

// "1-250" (or "1..250", or "47") -> [1, 250]: the bake is one contiguous range.
function parseBakeRange(text) {
    const frames = parseFrames(text, "bake_frames");
    const start = frames[0];
    const end = frames[frames.length - 1];
    if (frames.length !== end - start + 1 || text.indexOf(",") >= 0) {
        throw new Error(`Unified Particles job: bake_frames "${text}" must be one range START-END ` +
            `(e.g. "${start}-${end}"): the simulation runs through every frame from its start`);
    }
    return [start, end];
}

// The bake task: simulates frames bakeStart..bakeEnd, writes the bake into the .blend and its cache
// folder, saves the .blend. Exits non-zero (failing the task) when the bake fails; a retried task
// continues from the last written frame.
function authorBakeTask(settings, bakeStart, bakeEnd) {
    const task = author.Task(`bake-${bakeStart}-${bakeEnd}`, "blender");
    let command;
    if (settings.bake_mode === "python-module") {
        command = author.Command("exec", {
            exe: settings.python_exe,
            args: [
                "-m", "unified_particles.farm",
                settings.blendfile,
                "--frames", `${bakeStart}:${bakeEnd}`,
            ],
        });
    } else {
        // `{blenderArgs}` (the Manager's default Blender arguments, "-b -y" unless configured) holds
        // the background flag, as for Flamenco's own render tasks.
        command = author.Command("blender-render", {
            exe: "{blender}",
            exeArgs: "{blenderArgs}",
            argsBefore: [],
            blendfile: settings.blendfile,
            args: [
                "--python-exit-code", "1",
                "--python-expr", bakePythonExpr(bakeStart, bakeEnd),
            ],
        });
    }
    task.addCommand(command);
    return task;
}

function bakePythonExpr(bakeStart, bakeEnd) {
    return "import bpy; " +
        `bpy.ops.unified_particles.bake(use_custom_range=True, frame_start=${bakeStart}, frame_end=${bakeEnd}); ` +
        "bpy.ops.wm.save_mainfile()";
}

// Do field replacement on the render output path (as in Flamenco's simple_blender_render.js).
function renderOutputPath(job) {
    const outputPath = job.settings.render_output_path;
    if (!outputPath) {
        throw new Error("Unified Particles job: no render_output_path setting; set render_output_root");
    }
    return outputPath.replace(/{([^}]+)}/g, (match, group0) => {
        switch (group0) {
        case "timestamp":
            return formatTimestampLocal(job.created);
        default:
            return match;
        }
    });
}

function authorRenderTasks(settings, renderDir, renderOutput) {
    print("authorRenderTasks(", renderDir, renderOutput, ")");
    const renderTasks = [];
    const chunks = frameChunker(settings.frames, settings.chunk_size);
    for (const chunk of chunks) {
        const task = author.Task(`render-${chunk}`, "blender");
        const command = author.Command("blender-render", {
            exe: "{blender}",
            exeArgs: "{blenderArgs}",
            argsBefore: [],
            blendfile: settings.blendfile,
            args: [
                "--render-output", path.join(renderDir, path.basename(renderOutput)),
                "--render-format", settings.format,
                "--render-frame", chunk.replaceAll("-", ".."), // Convert to Blender frame range notation.
            ]
        });
        task.addCommand(command);
        renderTasks.push(task);
    }
    return renderTasks;
}

function authorCreateVideoTask(settings, renderDir) {
    const needsPreviews = ffmpegIncompatibleImageFormats.has(settings.format);
    if (needsPreviews && !settings.has_previews) {
        print("Not authoring video task, FFmpeg-incompatible render output");
        return undefined;
    }
    if (!settings.fps) {
        print("Not authoring video task, no FPS known:", settings);
        return undefined;
    }

    let frames = `${settings.frames}`;
    if (frames.search(",") !== -1) {
        // Get the first and last frame from the list
        const chunks = frameChunker(settings.frames, 1);
        const firstFrame = chunks[0];
        const lastFrame = chunks.slice(-1)[0];
        frames = `${firstFrame}-${lastFrame}`;
    }

    const stem = path.stem(settings.blendfile).replace(".flamenco", "");
    const outfile = path.join(renderDir, `${stem}-${frames}.mp4`);
    const outfileExt = needsPreviews ? ".jpg" : settings.image_file_extension;

    const task = author.Task("preview-video", "ffmpeg");
    const command = author.Command("frames-to-video", {
        exe: "ffmpeg",
        fps: settings.fps,
        inputGlob: path.join(renderDir, `*${outfileExt}`),
        outputFile: outfile,
        args: [
            "-c:v", "h264",
            "-crf", "20",
            "-g", "18",
            "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2",
            "-pix_fmt", "yuv420p",
            "-r", settings.fps,
            "-y", // Be sure to always pass either "-n" or "-y".
        ],
    });
    task.addCommand(command);

    print(`Creating output video for ${settings.format}`);
    return task;
}
