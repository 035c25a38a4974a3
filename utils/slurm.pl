#!/usr/bin/env perl
# Runs a command, or an array of JOB=1:N commands, as one SLURM job array, waits for it,
# and fails if any task failed.  Same interface and log format as utils/run.pl:
#
#   utils/slurm.pl [--mem 4G] [--num-threads N | -pe smp N] [--gpu N] [--time T]
#                  [--max-jobs-run K | -tc K] [--config FILE] [-p gpu ...] [JOB=1:N] LOGFILE command args...
#
# --mem, --num-threads, --gpu and --time become sbatch options through a config read from
# --config FILE, else conf/slurm.conf in the current directory (the recipe's), else the
# built-in default below (also in the repository's conf/slurm.conf): --mem is per CPU
# (--mem-per-cpu, Kaldi's convention), --gpu N adds --partition=gpu --gres=gpu:N.
# Config lines ("#" starts a comment at a line start or after whitespace):
#   command <sbatch and the options every job gets>
#   option NAME=*      <sbatch options; $0 is replaced by the value given>
#   option NAME=VALUE  <sbatch options for exactly that value (may be empty)>
#   default NAME=VALUE value used when the runner is not given --NAME
# --max-jobs-run K becomes the array throttle %K.  Kaldi's queue.pl (GridEngine) options:
# -tc K is --max-jobs-run K, -pe smp N is --num-threads N, -sync y, -cwd and -j y are
# accepted (slurm.pl always waits, runs jobs in the current directory and writes one log),
# and -sync n, another -pe and -l RES (e.g. -l arch=*64: sbatch has no -l) are refused,
# naming the option.  Other single-dash options go to sbatch as given, after the mapped ones
# (so "-p gpu" overrides the partition; -q is sbatch's --qos, not a GridEngine queue): "-x"
# takes one value except the flags -H -k -O -Q -s -v -W; "-pgpu" is one word; -V
# (GridEngine's "export the environment", sbatch's --version) becomes --export=ALL.
# The job script cd's to the current directory and sources ./path.sh when it exists, so
# jobs also work when the cluster starts them with --export=NONE.  A job range of more
# than one job needs the job variable in LOGFILE.  Each task's log gets the command,
# start time, host ("# Running on HOST"), SLURM ids ("# SLURM_JOB_ID=... SLURM_ARRAY_JOB_ID=...
# SLURM_ARRAY_TASK_ID=..."), output, "# Accounting: time=SECONDS threads=N" (N: the CPUs
# asked for, --num-threads) and exit code.  A task counts as failed when SLURM reports
# a state other than COMPLETED (FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL...)
# or its log shows a non-zero or missing exit code.  Ctrl-C cancels the job array.
# Waiting: squeue is polled every PUNCT_SLURM_POLL seconds (default 0.5), the interval growing by half
# each time up to PUNCT_SLURM_POLL_MAX (default 5).  A failing squeue (a busy slurmctld) is retried for
# up to PUNCT_SLURM_SQUEUE_PATIENCE seconds (default 600) before the logs alone decide.  Once the array
# has left the queue, the log of each task that SLURM does not report as failed is given up to
# PUNCT_SLURM_LOG_WAIT seconds (default 120) to show its exit-code footer (a shared file system may show
# it late) before the task counts as failed.
use strict;
use warnings;
use Cwd qw(getcwd);
use File::Basename qw(basename dirname);
use FindBin;
use lib "$FindBin::RealBin/lib";
use PunctJobs;
use Time::HiRes qw(sleep);

my $DEFAULT_CONFIG = <<'EOF';
command sbatch --export=ALL --ntasks=1 --partition=shared
option mem=* --mem-per-cpu=$0
option mem=0
option num_threads=* --cpus-per-task=$0
option num_threads=1 --cpus-per-task=1
option time=* --time=$0
option gpu=0
option gpu=* --partition=gpu --gres=gpu:$0
default gpu=0
default num_threads=1
EOF

my $prog = "slurm.pl";
my $parsed = eval { PunctJobs::parse_command_line($prog, @ARGV) };
if ($@) { print STDERR $@; exit 1; }
if (@{$parsed->{resources}}) {
  print STDERR "$prog: $parsed->{resources}[0] is a GridEngine resource request (queue.pl's -l), which sbatch"
    . " does not have: ask with --mem, --gpu or --time, or put sbatch options (e.g. --constraint) in"
    . " conf/slurm.conf\n";
  exit 1;
}
my %options = %{$parsed->{options}};
my $config_file = delete $options{config};
$config_file = "conf/slurm.conf" if !defined $config_file && -e "conf/slurm.conf";
my $config_name = $config_file // "the built-in default config";
my $max_jobs_run = delete $options{max_jobs_run};
my @passthrough = map { $_ eq "-V" ? "--export=ALL" : $_ } @{$parsed->{passthrough}};
my $poll_seconds = $ENV{PUNCT_SLURM_POLL} // 0.5;
my $poll_max = $ENV{PUNCT_SLURM_POLL_MAX} // 5;
my $squeue_patience = $ENV{PUNCT_SLURM_SQUEUE_PATIENCE} // 600;
my $log_wait = $ENV{PUNCT_SLURM_LOG_WAIT} // 120;

# ---------------------------------------------------------------- config
sub read_config {
  my ($file) = @_;
  my $fh;
  if (defined $file) {
    open($fh, "<", $file) or die "$prog: cannot read config $file: $!\n";
  } else {
    open($fh, "<", \$DEFAULT_CONFIG) or die "$prog: cannot read the built-in config\n";
  }
  my (@command, %exact, %wildcard, %defaults);
  while (my $line = <$fh>) {
    chomp $line;
    $line =~ s/(?:^|\s)#.*$//;
    $line =~ s/^\s+|\s+$//g;
    next if $line eq "";
    if ($line =~ /^command\s+(.+)$/) {
      @command = split /\s+/, $1;
    } elsif ($line =~ /^option\s+(\w+)=\*\s*(.*)$/) {
      $wildcard{$1} = $2;
    } elsif ($line =~ /^option\s+(\w+)=(\S+)\s*(.*)$/) {
      $exact{"$1=$2"} = $3;
    } elsif ($line =~ /^default\s+(\w+)=(\S+)$/) {
      $defaults{$1} = $2;
    } else {
      die "$prog: $config_name line $.: cannot parse '$line'\n";
    }
  }
  close $fh;
  die "$prog: $config_name has no 'command' line\n" unless @command;
  return { command => \@command, exact => \%exact, wildcard => \%wildcard, defaults => \%defaults };
}

sub sbatch_options {
  my ($config, $opts) = @_;
  my %values = (%{$config->{defaults}}, %$opts);
  my @result;
  for my $name (sort keys %values) {
    my $value = $values{$name};
    my $mapped;
    if (exists $config->{exact}{"$name=$value"}) {
      $mapped = $config->{exact}{"$name=$value"};
    } elsif (exists $config->{wildcard}{$name}) {
      ($mapped = $config->{wildcard}{$name}) =~ s/\$0/$value/g;
    } else {
      die "$prog: option --$name=$value has no mapping in $config_name\n";
    }
    push @result, split(/\s+/, $mapped) if length $mapped;
  }
  # A later --partition overrides an earlier one (e.g. GPU jobs).
  return @result;
}

# ---------------------------------------------------------------- job script
my $config = eval { read_config($config_file) };
if ($@) { print STDERR $@; exit 1; }
my @sbatch = (@{$config->{command}}, eval { sbatch_options($config, \%options) });
if ($@) { print STDERR $@; exit 1; }
my $threads = $options{num_threads} // $config->{defaults}{num_threads} // 1;
$threads = 1 unless $threads =~ /^[1-9]\d*$/;
push @sbatch, @passthrough;

my ($first, $last, $jobvar) = ($parsed->{first}, $parsed->{last}, $parsed->{jobvar});
my $total = $last - $first + 1;
my $logfile = $parsed->{logfile};
my $log_dir = dirname($logfile);
my $queue_dir = "$log_dir/q";
(my $base = basename($logfile)) =~ s/\.log$//;
$base = PunctJobs::substitute_job($base, $jobvar, "") if defined $jobvar;
$base =~ s/\.\././g; $base =~ s/^\.|\.$//g;
$base = "job" if $base eq "";
system("mkdir", "-p", $queue_dir) == 0 or die "$prog: cannot create $queue_dir\n";

my $command_text = join(" ", map { PunctJobs::shell_quote($_) } @{$parsed->{args}});
my $command_shell = join(" ", map { PunctJobs::shell_quote_with_var($_, $jobvar, "task_id") } @{$parsed->{args}});
my $log_shell = PunctJobs::shell_quote_with_var($logfile, $jobvar, "task_id");
my $header_shell = PunctJobs::shell_quote_with_var($command_text, $jobvar, "task_id");
my $script = "$queue_dir/$base.sh";
my $cwd = getcwd();
my $array = "$first-$last" . (defined $max_jobs_run ? "%$max_jobs_run" : "");
my @submit = (@sbatch, "--parsable", "--job-name=$base", "--array=$array",
  "--output=$queue_dir/$base.%a.out", $script);
my $submit_text = join(" ", map { PunctJobs::shell_quote($_) } @submit);
(my $submit_comment = "$submit_text ($config_name)") =~ s/\n/ /g;

open(my $sh, ">", "$script.tmp") or die "$prog: cannot write $script: $!\n";
print $sh <<"SCRIPT";
#!/usr/bin/env bash
# Written by utils/slurm.pl; one SLURM array task runs one job.  Submitted with
# $submit_comment
cd @{[PunctJobs::shell_quote($cwd)]} || exit 1
task_id=\${SLURM_ARRAY_TASK_ID:-$first}
log=$log_shell
mkdir -p "\$(dirname "\$log")"
{
  printf '# %s\\n' $header_shell
  echo "# Started at \$(date '+%a %b %e %H:%M:%S %Z %Y')"
  echo "# Running on \${HOSTNAME:-\$(uname -n)}"
  echo "# SLURM_JOB_ID=\${SLURM_JOB_ID:-} SLURM_ARRAY_JOB_ID=\${SLURM_ARRAY_JOB_ID:-} SLURM_ARRAY_TASK_ID=\${SLURM_ARRAY_TASK_ID:-}"
  echo "#"
} > "\$log"
start=\$(date +%s)
ret=0
# The recipe's environment, also when the cluster does not export the submitting shell's.
if [ -f ./path.sh ]; then
  . ./path.sh >>"\$log" 2>&1 || { ret=\$?; echo "slurm.pl: sourcing ./path.sh failed" >>"\$log"; }
fi
if [ \$ret -eq 0 ]; then
  set -o pipefail
  ( $command_shell ) >>"\$log" 2>&1
  ret=\$?
fi
elapsed=\$(( \$(date +%s) - start ))
echo "# Accounting: time=\$elapsed threads=$threads" >> "\$log"
echo "# Ended (code \$ret) at \$(date '+%a %b %e %H:%M:%S %Z %Y'), elapsed time \$elapsed seconds" >> "\$log"
exit \$ret
SCRIPT
close $sh;
rename("$script.tmp", $script) or die "$prog: cannot rename $script.tmp: $!\n";
chmod 0755, $script;

# ---------------------------------------------------------------- submit
my $answer = `$submit_text 2>&1`;
my $submit_code = $? >> 8;
chomp $answer;
if ($submit_code != 0 || $answer !~ /^(\d+)/m) {
  print STDERR "$prog: sbatch refused the job (exit $submit_code): $answer\n$prog: command was: $submit_text\n";
  exit 1;
}
my $job_id = $1;
print STDERR "$prog: submitted job array $job_id ($total task(s), array $array) for $logfile\n";

my $cancelled = 0;
sub cancel_and_exit {
  my ($signal) = @_;
  system("scancel", $job_id);
  print STDERR "$prog: interrupted by SIG$signal, cancelled job $job_id\n";
  exit 130;
}
$SIG{INT} = sub { cancel_and_exit("INT") };
$SIG{TERM} = sub { cancel_and_exit("TERM") };

# ---------------------------------------------------------------- wait
# Polls squeue, more slowly as the job runs, until the array has left the queue; squeue errors are
# retried for $squeue_patience seconds.
sub wait_for_queue {
  my $interval = $poll_seconds;
  my $failing_since;
  while (1) {
    my $queued = `squeue -h -j $job_id -o %i 2>&1`;
    my $code = $? >> 8;
    if ($code == 0) {
      return if $queued !~ /\S/;
      undef $failing_since;
    } elsif (!defined $failing_since) {
      $failing_since = time();
      chomp $queued;
      print STDERR "$prog: squeue failed (exit $code: $queued); retrying for up to $squeue_patience s\n";
    } elsif (time() - $failing_since > $squeue_patience) {
      print STDERR "$prog: squeue has failed for $squeue_patience s; judging job $job_id by its logs\n";
      return;
    }
    sleep($interval);
    $interval = $interval * 1.5 > $poll_max ? $poll_max : $interval * 1.5;
  }
}

# Waits until every log of @tasks has its exit-code footer, for up to $log_wait seconds in all.
sub wait_for_logs {
  my (@tasks) = @_;
  my $deadline = time() + $log_wait;
  my $interval = $poll_seconds;
  for my $task (@tasks) {
    my $task_log = PunctJobs::substitute_job($logfile, $jobvar, $task);
    while (!defined PunctJobs::exit_code_in_log($task_log) && time() < $deadline) {
      sleep($interval);
      $interval = $interval * 1.5 > $poll_max ? $poll_max : $interval * 1.5;
    }
  }
}

wait_for_queue();

# ---------------------------------------------------------------- verdict
my %state;   # task id => JobState
for my $record (split /\n/, `scontrol show job -o $job_id 2>/dev/null`) {
  my ($task) = $record =~ /\bArrayTaskId=(\d+)\b/;
  my ($job_state) = $record =~ /\bJobState=(\S+)/;
  $state{$task} = $job_state if defined $task && defined $job_state;
}
# A task SLURM reports as failed never writes a footer; the others' logs may still be on their way.
wait_for_logs(grep { !defined $state{$_} || $state{$_} eq "COMPLETED" } $first .. $last);

my @failed;
for my $task ($first .. $last) {
  my $task_log = PunctJobs::substitute_job($logfile, $jobvar, $task);
  my $code = PunctJobs::exit_code_in_log($task_log);
  my $job_state = $state{$task};
  my @why;
  push @why, "state $job_state" if defined $job_state && $job_state ne "COMPLETED";
  push @why, defined $code ? "exit code $code" : "no exit code in log" if !defined $code || $code != 0;
  push @failed, [$task_log, join(", ", @why)] if @why && !(defined $job_state && $job_state eq "COMPLETED" && defined $code && $code == 0);
}
if (@failed) {
  print STDERR PunctJobs::failure_message($prog, scalar(@failed), $total, $failed[0][0],
    "job $job_id; $failed[0][1]; SLURM output in $queue_dir");
  exit 1;
}
exit 0;
