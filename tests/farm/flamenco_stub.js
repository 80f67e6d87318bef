// SPDX-License-Identifier: GPL-3.0-or-later
//
// A small stand-in for Flamenco Manager's job compiler, to test job type scripts in Node.
//
// It loads a job type file the way the Manager does (internal/manager/job_compilers/scripts.go,
// job_compilers.go in https://projects.blender.org/studio/flamenco, mirrored at
// https://github.com/blender/flamenco): the file is run as a plain script, in strict mode, in a fresh
// global environment that holds the Manager's globals; the script defines `const JOB_TYPE` and
// `function compileJob(job)` as globals (no module.exports, no require). The job type is named after
// the file ("my_job_type.js" -> "my-job-type"). compileJob() gets a job object with `name`,
// `created`, `settings` and `addTask()`.
//
// The globals are ported from the Manager's Go code:
// - author.Task(name, type), author.Command(name, parameters[, totalStepCount]),
//   task.addCommand(cmd), task.addDependency(task), job.addTask(task)   (author.go)
// - frameChunker(frames, chunkSize), frameCount(frames), formatTimestampLocal(time),
//   print(...), alert(...)                                                (js_globals.go, scripts.go)
// - path.basename / dirname / join / stem (forward slashes, backslashes converted)
//                                                                         (js_path.go, pkg/crosspath)
// Not stubbed: shellSplit, the `process` module.
//
// Like the Go code, job.addTask() and task.addCommand() store copies: a dependency added to a task
// after job.addTask(task) is not part of the job.

"use strict";

const fs = require("node:fs");
const nodePath = require("node:path");
const vm = require("node:vm");
const crypto = require("node:crypto");

// ---------------------------------------------------------------------------------------------
// frameChunker & co. (js_globals.go)

function invalidRange(theRange, message, cause) {
    if (cause) {
        return new Error(`invalid range "${theRange}":  ${message} (${cause})`);
    }
    return new Error(`invalid range "${theRange}": ${message}`);
}

// strconv.ParseInt(strings.TrimSpace(s), 10, 64): returns [value, errorText].
function parseIntGo(s) {
    const trimmed = s.trim();
    if (!/^[+-]?[0-9]+$/.test(trimmed)) {
        return [0, `strconv.ParseInt: parsing ${JSON.stringify(trimmed)}: invalid syntax`];
    }
    return [parseInt(trimmed, 10), null];
}

// frameRangeExplode: "1-3,5..6" -> [1, 2, 3, 5, 6] (sorted, unique).
function frameRangeExplode(frameRange) {
    const frames = new Set();
    frameRange = frameRange.replaceAll("..", "-");
    for (const part of frameRange.split(",")) {
        const startEnd = part.split("-");
        if (startEnd.length === 1) {
            const [frame, err] = parseIntGo(startEnd[0]);
            if (err) {
                throw invalidRange(frameRange, part, err);
            }
            frames.add(frame);
        } else if (startEnd.length === 2) {
            const [startFrame, startErr] = parseIntGo(startEnd[0]);
            const [endFrame, endErr] = parseIntGo(startEnd[1]);
            if (startErr || endErr) {
                throw invalidRange(frameRange, part, startErr || endErr);
            }
            for (let frame = startFrame; frame <= endFrame; frame++) {
                frames.add(frame);
            }
        } else {
            throw invalidRange(frameRange, part);
        }
    }
    return Array.from(frames).sort((a, b) => a - b);
}

// frameRangeMerge: [3, 4, 5, 8, 9, 11] -> "3-5,8,9,11" (runs of 3 or more become "A-B").
function frameRangeMerge(frames) {
    const ranges = [];
    const appendRange = (fromFrame, toFrame) => {
        if (fromFrame === toFrame) {
            ranges.push(String(fromFrame));
        } else if (fromFrame + 1 === toFrame) {
            ranges.push(String(fromFrame), String(toFrame));
        } else {
            ranges.push(`${fromFrame}-${toFrame}`);
        }
    };
    let startFrame = frames[0];
    let prevFrame = frames[0];
    for (const currentFrame of frames) {
        if (currentFrame > prevFrame + 1) {
            appendRange(startFrame, prevFrame);
            startFrame = currentFrame;
        }
        prevFrame = currentFrame;
    }
    appendRange(startFrame, frames[frames.length - 1]);
    return ranges.join(",");
}

function frameChunker(frameRange, chunkSize) {
    frameRange = String(frameRange).trim();
    chunkSize = Math.trunc(Number(chunkSize)); // Goja converts the JS value to a Go int.
    if (frameRange.length === 0) {
        throw invalidRange(frameRange, "empty range");
    }
    if (!(chunkSize >= 1)) {
        throw new Error(`invalid chunk size, must be positive number: ${chunkSize}`);
    }
    const frames = frameRangeExplode(frameRange);
    if (frames.length === 0) {
        throw invalidRange(frameRange, "empty range");
    }
    const chunks = [];
    for (let i = 0; i < frames.length; i += chunkSize) {
        chunks.push(frameRangeMerge(frames.slice(i, i + chunkSize)));
    }
    return chunks;
}

function frameCount(frameRange) {
    return frameRangeExplode(String(frameRange)).length;
}

// Go layout "2006-01-02_150405", local time.
function formatTimestampLocal(timestamp) {
    const t = new Date(timestamp);
    const pad = (n, width = 2) => String(n).padStart(width, "0");
    return `${pad(t.getFullYear(), 4)}-${pad(t.getMonth() + 1)}-${pad(t.getDate())}_` +
        `${pad(t.getHours())}${pad(t.getMinutes())}${pad(t.getSeconds())}`;
}

// ---------------------------------------------------------------------------------------------
// path module (js_path.go -> pkg/crosspath, Go's `path`)

const toSlash = (p) => String(p).replaceAll("\\", "/");

// Go's path.Clean.
function goClean(p) {
    if (p === "") {
        return ".";
    }
    let cleaned = nodePath.posix.normalize(p);
    if (cleaned.length > 1 && cleaned.endsWith("/")) {
        cleaned = cleaned.slice(0, -1);
    }
    return cleaned;
}

function goBase(p) {
    if (p === "") {
        return ".";
    }
    const trimmed = p.replace(/\/+$/, "");
    if (trimmed === "") {
        return "/";
    }
    return trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

function goExt(p) {
    for (let i = p.length - 1; i >= 0 && p[i] !== "/"; i--) {
        if (p[i] === ".") {
            return p.slice(i);
        }
    }
    return "";
}

const flamencoPath = {
    basename: (p) => goBase(toSlash(p)),
    dirname: (p) => {
        if (p === "") {
            return ".";
        }
        const slashed = toSlash(p);
        const dir = slashed.slice(0, slashed.lastIndexOf("/") + 1);
        if (dir === "") {
            return ".";
        }
        return dir.length > 1 ? dir.slice(0, -1) : dir;
    },
    join: (...elems) => {
        const parts = elems.map(String).filter((e) => e !== "");
        return parts.length === 0 ? "" : toSlash(goClean(parts.join("/")));
    },
    stem: (p) => {
        const base = goBase(toSlash(p));
        return base.slice(0, base.length - goExt(base).length);
    },
};

// ---------------------------------------------------------------------------------------------
// author module (author.go)

// A JS value as Goja exports it to Go: plain data, detached from the script (and from its realm).
function exportValue(value) {
    return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

class AuthoredTask {
    constructor(name, type) {
        this.uuid = crypto.randomUUID();
        this.name = name;
        this.type = type;
        this.priority = 50;
        this.commands = [];
        this.dependencies = [];
    }

    addCommand(command) {
        this.commands.push({ ...command });
    }

    addDependency(task) {
        if (!(task instanceof AuthoredTask)) {
            throw new TypeError("task.addDependency(task): expected a task made by author.Task()");
        }
        this.dependencies.push(task);
    }
}

const author = {
    Task(name, taskType) {
        name = name === undefined || name === null ? "" : String(name).trim();
        taskType = taskType === undefined || taskType === null ? "" : String(taskType).trim();
        if (name === "") {
            throw new Error("author.Task(name, type): name is required");
        }
        if (taskType === "") {
            throw new Error("author.Task(name, type): type is required");
        }
        return new AuthoredTask(name, taskType);
    },
    Command(cmdName, parameters, totalStepCount) {
        return {
            name: String(cmdName),
            parameters: exportValue(parameters) || {},
            totalStepCount: Math.trunc(Number(totalStepCount || 0)),
        };
    },
};

// ---------------------------------------------------------------------------------------------
// Loading a job type and compiling a job (scripts.go, job_compilers.go)

function filenameToJobType(filename) {
    const base = nodePath.basename(filename);
    return base.slice(0, base.length - nodePath.extname(base).length).replaceAll("_", "-");
}

class AuthoredJob {
    constructor({ name, created, settings, metadata, priority }) {
        this.jobID = crypto.randomUUID();
        this.name = name;
        this.created = created;
        this.priority = priority;
        this.settings = settings;
        this.metadata = metadata;
        this.tasks = [];
    }

    addTask(task) {
        if (!(task instanceof AuthoredTask)) {
            throw new TypeError("job.addTask(task): expected a task made by author.Task()");
        }
        // Go appends a copy of the task struct.
        this.tasks.push({
            uuid: task.uuid,
            name: task.name,
            type: task.type,
            priority: task.priority,
            commands: task.commands.slice(),
            dependencies: task.dependencies.slice(),
        });
    }
}

// Load a job type script. Returns { name, jobType, defaults(), compile(settings, options) }.
function loadJobType(filename) {
    const source = fs.readFileSync(filename, "utf8");
    const log = [];
    const context = vm.createContext({
        print: (...args) => log.push(["print", args]),
        alert: (...args) => log.push(["alert", args]),
        frameChunker,
        frameCount,
        formatTimestampLocal,
        author,
        path: flamencoPath,
    });
    // goja.Compile(filename, source, strict=true); the prefix keeps the line numbers.
    vm.runInContext(`"use strict"; ${source}`, context, { filename });

    const jobTypeValue = vm.runInContext("typeof JOB_TYPE === 'undefined' ? undefined : JOB_TYPE", context);
    if (jobTypeValue === undefined) {
        throw new Error(`script (${filename}) does not define a JOB_TYPE object`);
    }
    const compileJob = vm.runInContext("typeof compileJob === 'function' ? compileJob : undefined", context);
    const jobType = exportValue(jobTypeValue);

    return {
        name: filenameToJobType(filename),
        jobType,
        log,
        context,
        // The values the Blender add-on sends for settings the caller leaves out: their defaults.
        defaults() {
            const values = {};
            for (const setting of jobType.settings) {
                if ("default" in setting) {
                    values[setting.key] = setting.default;
                }
            }
            return values;
        },
        // Compile a job with these settings. Returns the AuthoredJob; throws what compileJob throws.
        compile(settings, { name = "test job", created = new Date(2024, 0, 2, 3, 4, 5) } = {}) {
            if (compileJob === undefined) {
                throw new Error(`script (${filename}) does not define a compileJob(job) function`);
            }
            const job = new AuthoredJob({
                name,
                created,
                settings: { ...settings },
                metadata: {},
                priority: 50,
            });
            compileJob(job);
            return job;
        },
    };
}

module.exports = {
    loadJobType,
    filenameToJobType,
    frameChunker,
    frameCount,
    formatTimestampLocal,
    path: flamencoPath,
    author,
};
