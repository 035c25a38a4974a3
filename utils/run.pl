#!/usr/bin/env perl
# Runs a command, or an array of JOB=1:N commands, as local processes, each writing
# its own log (command, start time, host, output, run time and exit code).
#
#   utils/run.pl [--max-jobs-run K | -tc K] [--gpu G] [JOB=1:N] LOGFILE command args...
#
# At most K jobs run at once.  Default K: the number of CPUs (`nproc`, ignoring
# OMP_NUM_THREADS; the environment variable PUNCT_NPROC=N overrides it).  With --gpu G
# (G > 0) the default is instead the number of visible GPUs divided by G (at least 1), and
# each running job gets its own G GPUs through CUDA_VISIBLE_DEVICES (jobs share GPUs only
# when --max-jobs-run asks for more jobs than there are GPU groups).  The GPUs are:
# PUNCT_GPUS if set (a count N meaning devices 0..N-1, or a comma-separated id list), else
# the entries of CUDA_VISIBLE_DEVICES if it is set, else the GPUs `nvidia-smi -L` lists.
# With no GPU found, jobs run one at a time and CUDA_VISIBLE_DEVICES is left alone.
# --gpu G with fewer than G visible GPUs is refused.  Concurrent run.pl processes (two trainings
# started at once) get disjoint GPUs: a job's GPUs are locked (flock) in one directory shared by
# all of them, PUNCT_GPU_LOCK_DIR (default /tmp/punct-gpu-locks), one lock file per GPU named by
# its UUID (from `nvidia-smi --query-gpu=index,uuid`, else `nvidia-smi -L`; by its index when no
# UUID can be read); a job whose GPUs are all held by other run.pl processes waits for one.  Inside
# a SLURM job with GPUs bound by SLURM (SLURM_JOB_ID and CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS or
# SLURM_STEP_GPUS set) nothing is locked: SLURM gave the job its GPUs, and another job's "GPU 0"
# on the same node is another GPU (so two run.pl processes inside one SLURM job share its GPUs).
# A job that runs run.pl itself passes its GPUs on: the inner run.pl shares out only those
# (PUNCT_GPUS_HELD, set for every GPU job) and locks nothing.
# A job range of more than one job needs the job variable in LOGFILE.
# Each log has the command, start time and host ("# Running on HOST"), the output, then
# "# Accounting: time=SECONDS threads=N" (N: --num-threads, default 1) and the exit code.
# --mem, --num-threads, --time, --config and single-dash options (e.g. -p gpu) are
# accepted for compatibility with utils/slurm.pl and otherwise ignored here.  Of queue.pl's
# GridEngine options, -tc N is --max-jobs-run N, -pe smp N is --num-threads N, and -sync y,
# -cwd, -j y and -l RES (e.g. -l arch=*64) are accepted and ignored; -sync n, -j n and a -pe
# other than smp are refused, and so is a log file name without '.' or '/' right after a
# single-dash option that took no separate value (it is likely that option's value; PunctJobs.pm).
# Exits 0 when every job succeeded; otherwise prints how many failed and the first failing
# log, and exits 1.  Ctrl-C stops all running jobs.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/lib";
use Fcntl qw(:flock);
use POSIX qw(:sys_wait_h setpgid);
use Time::HiRes qw(sleep);
use PunctJobs;

my $prog = "run.pl";
my $parsed = eval { PunctJobs::parse_command_line($prog, @ARGV) };
if ($@) { print STDERR $@; exit 1; }

my ($first, $last) = ($parsed->{first}, $parsed->{last});
my $total = $last - $first + 1;
my $gpus_per_job = $parsed->{options}{gpu} // 0;

# Number of CPUs: PUNCT_NPROC, else nproc (without the OpenMP variables it honours),
# else /proc/cpuinfo, else 1.
sub cpu_count {
  if (defined $ENV{PUNCT_NPROC} && length $ENV{PUNCT_NPROC}) {
    die "$prog: PUNCT_NPROC must be a positive integer, not '$ENV{PUNCT_NPROC}'\n"
      unless $ENV{PUNCT_NPROC} =~ /^[1-9]\d*$/;
    return $ENV{PUNCT_NPROC};
  }
  {
    local %ENV = %ENV;
    delete @ENV{qw(OMP_NUM_THREADS OMP_THREAD_LIMIT)};
    my $n = `nproc 2>/dev/null`;
    return $1 if defined $n && $n =~ /^\s*([1-9]\d*)/;
  }
  if (open(my $fh, "<", "/proc/cpuinfo")) {
    my $n = grep { /^processor\s*:/ } <$fh>;
    close $fh;
    return $n if $n > 0;
  }
  return 1;
}

# Device ids of the visible GPUs (see the header); empty when none is found.
sub visible_gpus {
  return split /,/, $ENV{PUNCT_GPUS_HELD} if held_gpus();
  if (defined $ENV{PUNCT_GPUS} && length $ENV{PUNCT_GPUS}) {
    return (0 .. $ENV{PUNCT_GPUS} - 1) if $ENV{PUNCT_GPUS} =~ /^\d+$/;
    return grep { length } map { s/^\s+|\s+$//gr } split /,/, $ENV{PUNCT_GPUS};
  }
  if (defined $ENV{CUDA_VISIBLE_DEVICES}) {
    my @ids;
    for my $id (map { s/^\s+|\s+$//gr } split /,/, $ENV{CUDA_VISIBLE_DEVICES}) {
      last if $id eq "" || $id eq "NoDevFiles" || $id =~ /^-/;   # CUDA stops at an invalid entry
      push @ids, $id;
    }
    return @ids;
  }
  my $list = `nvidia-smi -L 2>/dev/null`;
  return () if $? != 0 || !defined $list;
  return map { /^GPU (\d+):/ ? $1 : () } split /\n/, $list;
}

# True inside a job of an outer run.pl that holds GPUs (and has locked them already).
sub held_gpus { return defined $ENV{PUNCT_GPUS_HELD} && length $ENV{PUNCT_GPUS_HELD}; }

# GPU groups: each running job takes one group of $gpus_per_job devices.
my @gpu_slots;
if ($gpus_per_job > 0) {
  my @devices = visible_gpus();
  if (@devices && @devices < $gpus_per_job) {
    print STDERR "$prog: --gpu $gpus_per_job asks for more GPUs than the " . scalar(@devices)
      . " visible here (" . join(",", @devices) . "); ask for at most " . scalar(@devices)
      . " (--ngpu) or make more visible (PUNCT_GPUS, CUDA_VISIBLE_DEVICES)\n";
    exit 1;
  }
  my $groups = int(@devices / $gpus_per_job);
  @gpu_slots = map { [@devices[$_ * $gpus_per_job .. ($_ + 1) * $gpus_per_job - 1]] } 0 .. $groups - 1;
}
my $max_running = $parsed->{options}{max_jobs_run};
if (!defined $max_running) {
  $max_running = $gpus_per_job > 0 ? (@gpu_slots || 1) : eval { cpu_count() };
  if ($@) { print STDERR $@; exit 1; }
}
# Jobs share a GPU group only when --max-jobs-run asks for more jobs than there are groups.
my $may_share = @gpu_slots && $max_running > @gpu_slots;
my @slot_users = (0) x @gpu_slots;   # running jobs per GPU group
my %slot_of;                          # pid => GPU group
my %slot_locks;                       # GPU group => its open, flock'ed lock files
my $lock_dir = $ENV{PUNCT_GPU_LOCK_DIR} // "/tmp/punct-gpu-locks";

my %running;        # pid => job id
my %exit_codes;     # job id => code

sub log_for { return PunctJobs::substitute_job($parsed->{logfile}, $parsed->{jobvar}, $_[0]); }

sub run_one_job {
  my ($jobid) = @_;
  my $logfile = log_for($jobid);
  PunctJobs::make_parent_dir($logfile);
  my $command = PunctJobs::command_for_job($parsed, $jobid);
  open(my $log, ">", $logfile) or die "$prog: cannot write log $logfile: $!\n";
  print $log PunctJobs::log_header($command);
  close $log;
  my $start = time();
  my $status = system("bash", "-o", "pipefail", "-c", "( $command ) >>" . PunctJobs::shell_quote($logfile) . " 2>&1");
  my $code = $status == -1 ? 127 : ($status & 127) ? 128 + ($status & 127) : $status >> 8;
  open($log, ">>", $logfile) or die "$prog: cannot append to log $logfile: $!\n";
  print $log PunctJobs::log_footer($code, time() - $start, $parsed->{options}{num_threads} || 1);
  close $log;
  return $code;
}

sub stop_all {
  my ($signal) = @_;
  for my $pid (keys %running) { kill("TERM", -$pid); }
  print STDERR "$prog: interrupted by SIG$signal, stopped " . scalar(keys %running) . " running job(s)\n";
  exit 130;
}
$SIG{INT} = sub { stop_all("INT") };
$SIG{TERM} = sub { stop_all("TERM") };

# Reaps one finished job (waiting for one unless $no_wait); returns whether one was reaped.
sub reap_one {
  my ($no_wait) = @_;
  my $pid = waitpid(-1, $no_wait ? WNOHANG : 0);
  return 0 if $pid <= 0 || !exists $running{$pid};
  my $jobid = delete $running{$pid};
  if (exists $slot_of{$pid}) {
    my $slot = delete $slot_of{$pid};
    unlock_slot($slot) if --$slot_users[$slot] == 0;
  }
  $exit_codes{$jobid} = ($? & 127) ? 128 + ($? & 127) : $? >> 8;
  return 1;
}

# True inside a SLURM job to which SLURM has bound GPUs (SLURM_JOB_ID with CUDA_VISIBLE_DEVICES,
# SLURM_JOB_GPUS or SLURM_STEP_GPUS): the GPUs it shows are this job's alone, whatever their index.
sub slurm_bound_gpus {
  return 0 unless defined $ENV{SLURM_JOB_ID} && length $ENV{SLURM_JOB_ID};
  return scalar grep { defined $ENV{$_} && length $ENV{$_} } qw(CUDA_VISIBLE_DEVICES SLURM_JOB_GPUS SLURM_STEP_GPUS);
}

# Device index => UUID of the GPUs nvidia-smi lists (--query-gpu, else the "(UUID: GPU-...)" of -L);
# empty when nvidia-smi is missing or shows no UUID.  Read once.
my $uuid_of;
sub gpu_uuids {
  return $uuid_of if $uuid_of;
  my %uuid;
  my $csv = `nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>/dev/null`;
  if ($? == 0 && defined $csv) {
    for (split /\n/, $csv) { $uuid{$1} = $2 if /^\s*(\d+)\s*,\s*((?:GPU|MIG)-[\w-]+)\s*$/; }
  }
  if (!%uuid) {
    my $list = `nvidia-smi -L 2>/dev/null`;
    if ($? == 0 && defined $list) {
      for (split /\n/, $list) { $uuid{$1} = $2 if /^GPU (\d+):.*\(UUID: ((?:GPU|MIG)-[\w-]+)\)/; }
    }
  }
  return $uuid_of = \%uuid;
}

# The lock file of one device: keyed by its UUID (the same GPU has the same UUID in every container
# and cgroup, where indices are renumbered), by the index when no UUID can be read.
sub lock_path {
  my ($id) = @_;
  my $key = $id =~ /^(?:GPU|MIG)-/ ? $id : defined gpu_uuids()->{$id} ? gpu_uuids()->{$id} : "gpu$id";
  $key =~ s/[^\w.-]/_/g;
  return "$lock_dir/$key.lock";
}

# Locks every GPU of a group for this run.pl; false (and nothing locked) when another process holds one.
sub lock_slot {
  my ($slot) = @_;
  return 1 if held_gpus();          # the outer job that passed its GPUs on has locked them
  return 1 if slurm_bound_gpus();   # SLURM gave this job its GPUs: other jobs' "GPU 0" is another GPU
  if (!-d $lock_dir) {
    mkdir $lock_dir;
    chmod 01777, $lock_dir;         # shared by every user's run.pl, like /tmp
  }
  my @locked;
  for my $id (@{$gpu_slots[$slot]}) {
    my $path = lock_path($id);
    open(my $fh, ">>", $path) or die "$prog: cannot open the GPU lock $path: $!\n";
    chmod 0666, $path;
    if (!flock($fh, LOCK_EX | LOCK_NB)) {
      close $_ for @locked, $fh;
      return 0;
    }
    push @locked, $fh;
  }
  $slot_locks{$slot} = \@locked;
  return 1;
}

sub unlock_slot { close $_ for @{delete $slot_locks{$_[0]} // []}; }

# A GPU group for the next job: an unused one this run.pl can lock, else (when --max-jobs-run allows
# sharing) the least-used of its own; -1 when none is free; undef without GPUs.
sub free_slot {
  return undef unless @gpu_slots;
  for my $s (0 .. $#gpu_slots) {
    return $s if $slot_users[$s] > 0 ? 0 : lock_slot($s);
  }
  my @own = grep { $slot_users[$_] > 0 } 0 .. $#gpu_slots;
  return -1 unless $may_share && @own;
  my $best = $own[0];
  for my $s (@own) { $best = $s if $slot_users[$s] < $slot_users[$best]; }
  return $best;
}

# Waits for a free job place and GPU group: jobs of this run.pl finish, or other run.pl processes unlock GPUs.
sub next_slot {
  my $told = 0;
  while (1) {
    reap_one() while scalar(keys %running) >= $max_running;
    my $slot = free_slot();
    return $slot if !defined $slot || $slot >= 0;
    if (!%running && !$told++) {
      print STDERR "$prog: waiting for a free GPU: all " . scalar(@gpu_slots) . " group(s) of $gpus_per_job"
        . " are held by other run.pl processes (locks in $lock_dir)\n";
    }
    reap_one(1) or sleep(0.5);
  }
}

for my $jobid ($first .. $last) {
  my $slot = next_slot();
  my $pid = fork();
  die "$prog: fork failed: $!\n" unless defined $pid;
  if ($pid == 0) {
    setpgid(0, 0);                 # own process group, so Ctrl-C handling can stop the whole job
    $SIG{INT} = $SIG{TERM} = 'DEFAULT';
    for my $other (grep { !defined $slot || $_ != $slot } keys %slot_locks) { unlock_slot($other); }
    if (defined $slot) {
      $ENV{CUDA_VISIBLE_DEVICES} = $ENV{PUNCT_GPUS_HELD} = join(",", @{$gpu_slots[$slot]});
    }
    exit(run_one_job($jobid) == 0 ? 0 : 1);
  }
  $running{$pid} = $jobid;
  if (defined $slot) { $slot_of{$pid} = $slot; $slot_users[$slot]++; }
}
reap_one() while %running;

my @failed = grep { $exit_codes{$_} != 0 } sort { $a <=> $b } keys %exit_codes;
if (@failed) {
  my $code = PunctJobs::exit_code_in_log(log_for($failed[0]));
  print STDERR PunctJobs::failure_message($prog, scalar(@failed), $total, log_for($failed[0]),
    defined $code ? "exit code $code" : "no exit code in log");
  exit 1;
}
exit 0;
