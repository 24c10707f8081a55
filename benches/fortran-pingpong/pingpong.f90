! Ping-pong between ranks 0 and 1 through `use mpi_f08`, printing the CSV of
! crates/bench/c/pingpong.c (bytes,iters,rtt_us,mb_per_s) for sizes 1 B and
! 64 KiB: what the Fortran glue adds to a call (benches/fortran-pingpong/run).
program pingpong
  use mpi_f08
  implicit none
  integer, parameter :: nsizes = 2
  integer :: sizes(nsizes) = [1, 65536]
  integer :: rank, i, k, n, iters, peer
  character, allocatable :: buf(:)
  double precision :: t0, t1, rtt
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  peer = 1 - rank
  iters = 20000
  allocate (buf(maxval(sizes)))
  buf = 'x'
  do k = 1, nsizes
    n = sizes(k)
    do i = 1, iters / 10 + 1
      call ping(n)
    end do
    call MPI_Barrier(MPI_COMM_WORLD)
    t0 = MPI_Wtime()
    do i = 1, iters
      call ping(n)
    end do
    t1 = MPI_Wtime()
    rtt = (t1 - t0) / iters * 1.0d6
    if (rank == 0) print '(i0,",",i0,",",f0.3,",",f0.1)', n, iters, rtt, 2.0d0 * n / rtt
  end do
  call MPI_Finalize()
contains
  subroutine ping(n)
    integer, intent(in) :: n
    if (rank == 0) then
      call MPI_Send(buf, n, MPI_CHARACTER, peer, 0, MPI_COMM_WORLD)
      call MPI_Recv(buf, n, MPI_CHARACTER, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    else
      call MPI_Recv(buf, n, MPI_CHARACTER, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
      call MPI_Send(buf, n, MPI_CHARACTER, peer, 0, MPI_COMM_WORLD)
    end if
  end subroutine ping
end program pingpong
